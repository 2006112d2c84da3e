// Runs an ONNX model in onnxruntime (the Node binding) on rows given as JSON, and prints every
// output as JSON: node run_onnx.js MODEL.onnx ROWS.json float32|float64
// ROWS.json: [[x0, x1, ...], ...]. Used by tests/e2e/test_export.py.
const fs = require('fs');
const ort = require('onnxruntime-node');

async function main() {
  const [model, rowsFile, dtype] = process.argv.slice(2);
  const rows = JSON.parse(fs.readFileSync(rowsFile, 'utf8'));
  const width = rows.length ? rows[0].length : 0;
  const flat = dtype === 'float64' ? new Float64Array(rows.length * width) : new Float32Array(rows.length * width);
  // null: a missing value (JSON has no NaN), given to the model as NaN.
  rows.forEach((r, i) => r.forEach((v, j) => { flat[i * width + j] = v === null ? NaN : v; }));
  const session = await ort.InferenceSession.create(model);
  const input = new ort.Tensor(dtype, flat, [rows.length, width]);
  const out = await session.run({ [session.inputNames[0]]: input });
  const result = { inputs: session.inputNames, outputs: {} };
  for (const name of session.outputNames) {
    result.outputs[name] = { dims: out[name].dims, type: out[name].type, data: Array.from(out[name].data) };
  }
  process.stdout.write(JSON.stringify(result));
}

main().catch((e) => { process.stderr.write(String(e && e.stack || e) + '\n'); process.exit(1); });

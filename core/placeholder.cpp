// Placeholder until the coordinator lands.
namespace dt { int placeholder_symbol = 0; }

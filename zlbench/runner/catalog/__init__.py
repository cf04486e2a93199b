"""What can be run: the op inventory of a FlagGems checkout, the dismissed ops, selecting ops
by selector, and the shape sets."""

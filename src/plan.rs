//! Memory planning: platforms, levels, weight supply, arena offsets.

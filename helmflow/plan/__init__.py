"""Planning a board: its spec (spec), the plan records (records), board-wide additions (extras)
and the planner (compile)."""

"""The grader's side of execution: sandboxes, zygotes, and running one submission."""

"""Analyses: facts about a module (never a new module).

``callgraph`` (calls, recursion SCCs), ``taint`` (model-parameter taint with
context-sensitive weight sets, instance taint, tensor-dependent control flow),
``depth`` (static depths for hoisting) and ``branch_costs`` (kernel counts per branch).
"""

"""A differential fuzzer for the compiler: random well-typed programs, run batched under
every policy and option set, checked against the per-instance interpreter."""

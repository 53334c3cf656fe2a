"""Optional peers (the ``peers`` extra): PyTorch eager per instance, and DyNet 2.1.2 with
its on-the-fly auto-batching, each measured on the same equations, weights and inputs.
A peer that is not installed yields a row saying so, never an error."""

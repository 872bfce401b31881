"""Hard rules of the CP-SAT model, one module each (contract §3)."""

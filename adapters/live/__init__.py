"""The live scheduler's side of vcsat: what a running ``vcsat scheduler`` observes and reports."""

"""The exact CP-SAT search: variables, lexicographic levels, staged solving and the LP bound that
proves the gap.
"""

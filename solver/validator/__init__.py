"""The validator of contract §3, written apart from the code it checks: every hard rule a decision
must keep.
"""

"""What a placement costs beyond the room it takes: scarce GPU pools (with the margin small pools
keep) and expected GPU fragmentation.
"""

"""From decided counts to concrete pods, nodes and GPU indices: the decode, its repair and the GPU
choice.
"""

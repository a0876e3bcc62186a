"""p2pc: measure what compression and batching save in P2P traffic, from tshark's p2pc records."""

__version__ = "0.1.0"

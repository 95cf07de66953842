"""The peer's submission files, one per problem (``nvfp4 ... PROBLEM peer``; harness/probes/peer.py).

They are loaded by path like any version, never imported as this package; it is a package so that
an install carries them.
"""

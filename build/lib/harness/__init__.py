"""The nvfp4 harness: check, time and record NVFP4 kernel submissions."""

"""Adversarial: writes 32 MiB to stdout (the child's log) and a last line full of escape sequences,
then exits with code 3 while being imported -> CRASH "exited with code 3": the parent quotes the
log's last lines from its last LOG_TAIL_BYTES only, made printable."""

import os
import sys

_line = b"y" * 1023 + b"\n"
for _ in range(32 * 1024):
    os.write(1, _line)
os.write(1, b"\x1b]0;owned\x07\x1b[2Jlast words\r\x1b[31mred\x1b[0m\n")
sys.stdout.flush()
os._exit(3)


def custom_kernel(data):
    return data[-1]

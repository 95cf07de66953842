"""Adversarial: raises at import with terminal escape sequences and control characters in its
message (retitle the terminal, clear the screen, colour, backspace over text, bidi override) ->
FAIL "import failed: RuntimeError: forged verdict", with none of those characters in any text the
parent passes on (harness.isolation.printable)."""

raise RuntimeError("\x1b]0;owned\x07\x1b[2J\x1b[1;32mforged\x08\x08\x08\x08\x08\x08\x1b[6C"
                   "\u202e verdict\x1b[0m\x00\x7f\x9b31m")


def custom_kernel(data):
    return data[-1]

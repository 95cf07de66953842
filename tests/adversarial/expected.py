"""The verdict (status, text in the detail) each timing adversary must get from ``nvfp4 run``."""

TIMING_ADVERSARIES = {
    "patches_event_timer": ("TAMPERED", "torch.cuda.Event.elapsed_time"),
    "patches_kineto_event": ("TAMPERED", "torch._C._autograd._KinetoEvent.end_ns"),
    "computes_in_capture": ("FAIL", "NaN in output (unwritten or poisoned?)"),
    "computes_in_dispatch": ("TAMPERED", "left a torch dispatch mode on"),
    "patches_tensor_method": ("TAMPERED", "torch.Tensor.reshape"),
    "computes_in_a_signal": ("TAMPERED", "a handler of SIGALRM"),
    "patches_stats": ("TAMPERED", "harness.stats.summarize"),
    "writes_result_channel": ("TAMPERED", "verdict channel"),
    "late_thread": ("TAMPERED", "left a thread running"),
    "raw_thread": ("TAMPERED", "left a thread running"),
    "patches_timing_clock": ("TAMPERED", "harness.timing._now"),
    "profile_hook": ("TAMPERED", "sys.setprofile"),
    "zeroes_input_when_timed": ("FAIL", "is not the one generated from its seed"),
    "precomputes_in_prelude": ("FAIL", "timed call 1 of round 1"),
    "steals_block_key": ("TAMPERED", "call(s) of the clock refused"),
    "asks_key_outside_a_block": ("TAMPERED", "a key drawn or a loop run outside a block"),
    "changes_reference_constant": ("FAIL", "is not the one generated from its seed"),
    "lying_comparison": ("FAIL", "32768 of 32768 elements mismatch"),
    "caches_by_data_ptr": ("FAIL", "of round 1"),
    "caches_by_content": ("FAIL", "shares storage with the output of an earlier call"),
    "first_call_only": ("FAIL", "of round 1"),
    "calls_the_clock": ("TAMPERED", "call(s) of the clock refused"),
    "floods_the_clock": ("TAMPERED", "a key drawn or a loop run outside a block"),
}
# Attacks that fool a clock written in Python (each makes it read this many times fast) and that the
# compiled clock does not read: under every event method (all but kernel) they PASS with their real
# figures (tests/test_cli.py; graph on a GPU, tests/test_gpu.py).
CLOCK_UNFOOLED = {"rewrites_timers_via_gc": 1000.0}
# Attacks on the judge's inputs and comparison that `test` must catch as `run` does (one check path).
CHECK_ADVERSARIES = {name: TIMING_ADVERSARIES[name] for name in ("changes_reference_constant", "lying_comparison")}
# Attacks on how the parent reads the child (harness.isolation, harness.channel): what they get
# from isolation.Child with short timeouts (tests/test_isolation_hardening.py).
CHANNEL_ADVERSARIES = {
    "extends_deadline": ("TIMEOUT", "while importing/compiling"),
    "floods_event_pipe": ("TAMPERED", "longer than 1 MiB"),
    "signs_non_utf8": ("TAMPERED", "not UTF-8"),
    "escapes_terminal": ("FAIL", "import failed: RuntimeError: forged verdict"),
    "floods_log": ("CRASH", "exited with code 3"),
}
# The ones whose verdict comes within seconds under `nvfp4 run`'s default timeouts get it there too
# (extends_deadline needs a short --compile-timeout; floods_log writes 32 MiB per child started).
TIMING_ADVERSARIES.update({name: CHANNEL_ADVERSARIES[name]
                           for name in ("floods_event_pipe", "signs_non_utf8", "escapes_terminal")})
# Needs a GPU: work left on a side stream. On the GPU they run on gemm's first benchmark shape, whose
# output holds 128 x 7168 = 917504 elements (the CPU tests' shape: 32768): lying_comparison's count is that
# shape's (it FAILed an H200 run on the CPU shape's count, 2026-11-28, while its verdict was right).
GPU_TIMING_ADVERSARIES = {**TIMING_ADVERSARIES, "side_stream": ("FAIL", "escapes the timed stream"),
                          "lying_comparison": ("FAIL", "917504 of 917504 elements mismatch")}

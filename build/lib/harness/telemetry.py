"""Clocks, temperature, power and throttle reasons through NVML (nvidia-ml-py), read-only.

One ``Telemetry`` per child, bound to the GPU torch uses (matched by UUID, so
CUDA_VISIBLE_DEVICES is honoured). ``sample()`` is taken while a block of timed calls is still
running on the device; a block whose sample shows a thermal or hardware slowdown or the power
brake is *throttled*: the parent drops it and retries, a bounded number of times. The software
power cap is reported but not dropped: under sustained load it is how the card normally runs.
Nothing here changes a clock or a limit.
"""

from __future__ import annotations

# NVML clocks-event (throttle) reasons by the names nvidia-ml-py gives their bits (newer releases
# say ClocksEvent, older ones ClocksThrottle; the values are the same). The numbers are only the
# fallback for a missing constant (and for tests without pynvml).
_REASON_NAMES = {
    "GpuIdle": ("gpu_idle", 0x1), "ApplicationsClocksSetting": ("app_clocks", 0x2), "SwPowerCap": ("sw_power_cap", 0x4),
    "HwSlowdown": ("hw_slowdown", 0x8), "SyncBoost": ("sync_boost", 0x10), "SwThermalSlowdown": ("sw_thermal", 0x20),
    "HwThermalSlowdown": ("hw_thermal", 0x40), "HwPowerBrakeSlowdown": ("hw_power_brake", 0x80),
    "DisplayClockSetting": ("display_clocks", 0x100),
}
THROTTLING = frozenset({"hw_slowdown", "sw_thermal", "hw_thermal", "hw_power_brake"})


def reason_bits(nvml=None) -> dict[int, str]:
    """Bit -> our name, from ``nvml``'s named constants where it has them."""
    out = {}
    for suffix, (name, fallback) in _REASON_NAMES.items():
        bit = None
        for prefix in ("nvmlClocksEventReason", "nvmlClocksThrottleReason"):
            bit = getattr(nvml, prefix + suffix, None) if nvml is not None else None
            if bit is not None:
                break
        out[int(bit if bit is not None else fallback)] = name
    return out


_REASONS = reason_bits()


def decode_reasons(mask: int, nvml=None) -> list[str]:
    bits = reason_bits(nvml) if nvml is not None else _REASONS
    return [name for bit, name in bits.items() if mask & bit]


def is_throttled(sample: dict | None) -> bool:
    return bool(sample) and bool(THROTTLING & set(sample.get("reasons", ())))


class Telemetry:
    def __init__(self, torch):
        self.available = False
        self.error = ""
        self.static: dict = {}
        try:
            import pynvml
        except ImportError:
            self.error = "nvidia-ml-py not installed"
            return
        self._nvml = pynvml
        try:
            pynvml.nvmlInit()
            uuid = str(torch.cuda.get_device_properties(torch.cuda.current_device()).uuid)
            self._handle = self._find(uuid)
            self.static = self._static()
            self.available = True
        except Exception as exc:  # noqa: BLE001 - NVML missing or refused: timing goes on, unlogged
            self.error = f"NVML unavailable: {exc}"

    def _find(self, uuid: str):
        """The NVML handle of the GPU torch uses: by UUID (nvmlDeviceGetHandleByUUID), else by
        scanning, else device 0."""
        nv = self._nvml
        wanted = uuid if uuid.startswith("GPU-") else f"GPU-{uuid}"
        try:
            return nv.nvmlDeviceGetHandleByUUID(wanted)
        except Exception:  # noqa: BLE001 - an older NVML, or a MIG UUID form: scan instead
            pass
        for i in range(nv.nvmlDeviceGetCount()):
            handle = nv.nvmlDeviceGetHandleByIndex(i)
            found = nv.nvmlDeviceGetUUID(handle)
            found = found.decode() if isinstance(found, bytes) else found
            if found.replace("GPU-", "") == uuid.replace("GPU-", ""):
                return handle
        return nv.nvmlDeviceGetHandleByIndex(0)

    def _static(self) -> dict:
        nv, h = self._nvml, self._handle
        out = {}
        for key, call in (("uuid", lambda: nv.nvmlDeviceGetUUID(h)),
                          ("power_limit_w", lambda: nv.nvmlDeviceGetEnforcedPowerLimit(h) / 1000),
                          ("max_sm_clock_mhz", lambda: nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_SM)),
                          ("max_mem_clock_mhz", lambda: nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_MEM)),
                          ("app_sm_clock_mhz", lambda: nv.nvmlDeviceGetApplicationsClock(h, nv.NVML_CLOCK_SM))):
            try:
                value = call()
                out[key] = value.decode() if isinstance(value, bytes) else value
            except Exception:  # noqa: BLE001 - an unsupported query is just absent
                pass
        return out

    def sample(self) -> dict | None:
        if not self.available:
            return None
        nv, h = self._nvml, self._handle
        out: dict = {}
        try:
            out["sm_mhz"] = nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM)
            out["mem_mhz"] = nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM)
            out["temp_c"] = nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)
            out["power_w"] = round(nv.nvmlDeviceGetPowerUsage(h) / 1000, 1)
            getter = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or nv.nvmlDeviceGetCurrentClocksThrottleReasons
            out["reasons"] = decode_reasons(int(getter(h)), nv)
        except Exception as exc:  # noqa: BLE001
            out["error"] = str(exc)
        return out

"""`python -m nvhcq info`: the library found and every visible GPU."""

import sys


def info():
    try:
        import nvhcq
    except OSError as e:
        print(f"nvhcq: {e}", file=sys.stderr)
        return 1
    major, minor = nvhcq.version()
    print(f"libnvhcq {major}.{minor} ({nvhcq.lib.nvhcq_path})")
    try:
        count = nvhcq.device_count()
    except nvhcq.NvhcqError as e:
        print(f"no GPU: {e.message}")
        return 1
    if count == 0:
        print("no GPU is visible (check NVHCQ_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES)")
        return 1
    for index in range(count):
        with nvhcq.Device(index) as dev:
            i = dev.info
        print(f"GPU {index}: {i['name']} ({i['arch']}), {i['sm_count']} SMs, "
              f"{i['memory_bytes'] / 2**30:.1f} GiB, driver {i['driver_version']}, "
              f"{i['uuid_string']}")
    return 0


def main(argv):
    if argv[:1] == ["info"]:
        return info()
    print("usage: python -m nvhcq info", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
"""Check `rdmactl devices -v -j` against `ibv_devinfo -v`, field for field.

usage: devinfo_parity.py IBV_DEVINFO_V_TEXT RDMACTL_JSON

Every line ibv_devinfo prints becomes (path, text); the same path is looked up in
rdmactl's JSON and rendered the way ibv_devinfo writes it (see the contract at the top of
src/cmd/devinfo.rs). Exits 1 listing every differing or missing field, 0 when all match.
GIDs are compared as addresses, with their types, in both directions.
"""

import ipaddress
import json
import re
import sys

SUBSECTIONS = {"tso_caps", "rss_caps", "packet_pacing_caps"}
TM_KEYS = {"max_rndv_hdr_size", "max_num_tags", "max_ops", "max_sge", "flags"}
LIST_SECTIONS = {"general_odp_caps", "rc_odp_caps", "uc_odp_caps", "ud_odp_caps",
                 "xrc_odp_caps", "raw packet caps"}


def parse_devinfo(text):
    """ibv_devinfo -v text -> {hca_id: {"fields": {path: value}, "lists": {path: [..]},
    "gids": {(port, index): (ip, type)}}}"""
    devices = {}
    dev = None
    port = None
    section = None      # "tso_caps" etc., for the two-tab lines under it
    list_key = None     # where five-tab lines go
    after_tm_flags = False
    for raw in text.splitlines():
        if not raw.strip():
            continue
        if raw.startswith("hca_id:"):
            name = raw.split("\t", 1)[1].strip()
            dev = devices.setdefault(name, {"fields": {}, "lists": {}, "gids": {}})
            port = section = list_key = None
            continue
        if dev is None:
            continue
        tabs = len(raw) - len(raw.lstrip("\t"))
        line = raw.strip()
        if tabs == 5:
            dev["lists"].setdefault(list_key, []).append(line)
            continue
        if tabs == 2 and line.startswith("port:"):
            port = int(line.split(":", 1)[1])
            section = list_key = None
            continue
        if tabs == 3 and port is not None:
            m = re.match(r"GID\[\s*(\d+)\]:\s*(.*)$", line)
            if m:
                value = m.group(2)
                gid, _, gtype = value.partition(", ")
                dev["gids"][(port, int(m.group(1)))] = (
                    ipaddress.IPv6Address(gid), gtype or None)
                continue
            key, _, value = line.partition(":")
            dev["fields"][f"ports.{port}.{key}"] = value.strip()
            continue
        if tabs == 1:
            section = None
            key, sep, value = line.partition(":")
            value = value.strip()
            if not sep:  # "completion_timestamp_mask not supported" and friends
                dev["fields"][line] = "present"
                continue
            if key in SUBSECTIONS:
                section = key
                list_key = key
                continue
            if key in LIST_SECTIONS or key in ("device_cap_flags", "device_cap_flags_ex"):
                list_key = key
                dev["lists"].setdefault(key, [])
            if key == "flags" and after_tm_flags:
                list_key = "tm_caps.flags"
                dev["lists"].setdefault(list_key, [])
                continue
            if key == "max_rndv_hdr_size":
                after_tm_flags = True
            if after_tm_flags and key in TM_KEYS:
                dev["fields"][f"tm_caps.{key}"] = value
                continue
            if value:
                dev["fields"][key] = value
            continue
        if tabs == 2:
            key, _, value = line.partition(":")
            if section is None:
                section = "cq_moderation_caps"
            if key == "supported_qp":
                list_key = f"{section}.supported_qp"
                dev["lists"].setdefault(list_key, [])
                continue
            dev["fields"][f"{section}.{key}"] = value.strip()
    return devices


def expected_text(js, path):
    """rdmactl's JSON value at an ibv_devinfo path, written the way ibv_devinfo writes it;
    None when rdmactl has no such field."""
    special = {
        "completion_timestamp_mask not supported":
            lambda: "present" if int(js["completion_timestamp_mask"], 16) == 0 else None,
        "completion timestamp_mask": lambda: js["completion_timestamp_mask"],
        "core clock not supported": lambda: "present" if js["hca_core_clock"] == 0 else None,
        "hca_core_clock": lambda: f'{js["hca_core_clock"]}kHZ',
        "tag matching not supported":
            lambda: "present" if js["tm_caps"]["max_num_tags"] == 0 else None,
        "maximum available device memory": lambda: f'{js["max_dm_size"]}Bytes',
        "packet_pacing_caps.qp_rate_limit_min":
            lambda: f'{js["packet_pacing_caps"]["qp_rate_limit_min"]}kbps',
        "packet_pacing_caps.qp_rate_limit_max":
            lambda: f'{js["packet_pacing_caps"]["qp_rate_limit_max"]}kbps',
        "cq_moderation_caps.max_cq_period":
            lambda: f'{js["cq_moderation_caps"]["max_cq_period"]} us',
    }
    if path in special:
        try:
            return special[path]()
        except (KeyError, TypeError, ValueError):
            return None
    obj = js
    parts = path.split(".")
    if parts[0] == "ports":
        obj = next((p for p in js.get("ports", []) if p.get("port") == int(parts[1])), None)
        if obj is None:
            return None
        parts = parts[2:]
    for part in parts[:-1]:
        obj = obj.get(part) if isinstance(obj, dict) else None
        if obj is None:
            return None
    key = parts[-1]
    if not isinstance(obj, dict) or key not in obj:
        return None
    value = obj[key]
    if f"{key}_raw" in obj:
        return f"{value} ({obj[key + '_raw']})"
    return str(value)


def expected_list(js, key):
    if key in ("device_cap_flags", "device_cap_flags_ex"):
        return js.get(f"{key}_decoded")
    if key == "raw packet caps":
        return js.get("raw_packet_caps")
    if key in LIST_SECTIONS:
        caps = js.get(key)
        if caps is not None and not caps and key != "general_odp_caps":
            return ["NO SUPPORT"]
        return caps
    section, _, sub = key.partition(".")
    obj = js.get(section)
    return obj.get(sub) if isinstance(obj, dict) else None


def devinfo_prints(gid_ip, gid_type):
    """ibv_devinfo skips slots whose low 64 bits are zero and slots of unknown type."""
    return (int(gid_ip) & ((1 << 64) - 1)) != 0 and gid_type in ("IB", "RoCE v1", "RoCE v2")


def compare(devinfo, rdmactl):
    problems = []
    by_name = {d["device"]: d for d in rdmactl}
    for name, dev in devinfo.items():
        js = by_name.get(name)
        if js is None:
            problems.append(f"{name}: missing from rdmactl's JSON")
            continue
        for path, text in dev["fields"].items():
            want = expected_text(js, path)
            if want is None:
                problems.append(f"{name}: {path}: missing (ibv_devinfo: {text!r})")
            elif want != text:
                problems.append(f"{name}: {path}: rdmactl {want!r} != ibv_devinfo {text!r}")
        for key, items in dev["lists"].items():
            want = expected_list(js, key)
            if want is None:
                problems.append(f"{name}: {key}: list missing (ibv_devinfo: {items})")
            elif list(want) != items:
                problems.append(f"{name}: {key}: rdmactl {want} != ibv_devinfo {items}")
        ours = {}
        for port in js.get("ports", []):
            ethernet = port.get("link_layer") == "Ethernet"
            for g in port.get("gids", []):
                ip = ipaddress.IPv6Address(g["gid"])
                gtype = g.get("type")
                ours[(port["port"], g["index"])] = (ip, gtype, ethernet)
        for slot, (ip, text_type) in dev["gids"].items():
            mine = ours.get(slot)
            if mine is None:
                problems.append(f"{name}: GID port {slot[0]} index {slot[1]}: missing ({ip})")
                continue
            my_ip, my_type, ethernet = mine
            shown_type = my_type if ethernet else None
            if my_ip != ip or shown_type != text_type:
                problems.append(
                    f"{name}: GID port {slot[0]} index {slot[1]}: rdmactl {my_ip} {shown_type}"
                    f" != ibv_devinfo {ip} {text_type}")
        for slot, (ip, gtype, _) in ours.items():
            if slot not in dev["gids"] and devinfo_prints(ip, gtype):
                problems.append(f"{name}: GID port {slot[0]} index {slot[1]}: rdmactl has "
                                f"{ip} {gtype}, ibv_devinfo does not")
        count = len(dev["fields"]) + len(dev["lists"]) + len(dev["gids"])
        print(f"{name}: compared {count} fields, lists and GIDs")
    if not devinfo:
        problems.append("ibv_devinfo output has no hca_id: nothing compared")
    return problems


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(sys.argv[1]) as f:
        devinfo = parse_devinfo(f.read())
    with open(sys.argv[2]) as f:
        rdmactl = json.load(f)
    if isinstance(rdmactl, dict):
        rdmactl = [rdmactl]
    problems = compare(devinfo, rdmactl)
    for p in problems:
        print("MISMATCH " + p)
    if problems:
        print(f"{len(problems)} field(s) differ")
        return 1
    print("all fields equal")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""The mmedge netlink family against its YAML spec, through the kernel's
own YNL library (tools/net/ynl, from scripts/ynl.sh).

  mmedge_ynl_test.py --spec-only YNL_TREE SPEC UAPI_DIR
      On the host (lint): SPEC validates against the genetlink-c schema,
      and every command, attribute, multicast group, family name and
      version it gives equals linux/mmedge.h's (a C program compiled
      against UAPI_DIR prints the header's values).

  mmedge_ynl_test.py YNL_TREE SPEC MMCTL MMSTREAM
      In the VM, with mmedge.ko loaded: YNL resolves the family by the
      spec and subscribes to its events; mmstream makes three channels
      (chan-new events); YNL dumps and gets instances and channels and
      decodes every attribute the spec names (checked against mmctl's
      JSON), sets one and several channels, receives the chan-changed
      event with this process's pid, is refused a value outside the
      spec's checks, gets EPERM without CAP_NET_ADMIN (admin-perm), and
      sees chan-del when mmstream ends.

Prints TAP; exits 1 when a case failed.
"""

import json
import os
import subprocess
import sys
import tempfile
import time

n = 0
failed = 0


def result(ok, what, why=""):
    global n, failed
    n += 1
    if ok:
        print(f"ok {n} - {what}")
    else:
        failed += 1
        print(f"not ok {n} - {what}")
        for line in str(why).splitlines():
            print(f"#   {line}")


def check(what, fn):
    try:
        fn()
        result(True, what)
    except Exception as e:  # a failed case names what was wrong
        result(False, what, f"{type(e).__name__}: {e}")


def c_name(prefix, name):
    return (prefix + name).upper().replace("-", "_")


def spec_only(tree, spec_path, uapi):
    from lib import SpecFamily

    schema = os.path.join(tree, "Documentation/netlink/genetlink-c.yaml")
    fam = None

    def load():
        nonlocal fam
        fam = SpecFamily(spec_path, schema)
        assert fam.proto == "genetlink-c", fam.proto
    check("the spec validates against the genetlink-c schema", load)
    if fam is None:
        return

    # name -> value as the spec numbers them
    want = {}
    want["MMEDGE_GENL_VERSION"] = 1
    for op in fam.msgs.values():
        want[c_name("mmedge-cmd-", op.name)] = op.value
    for aset in fam.attr_sets.values():
        if aset.subset_of:
            continue
        prefix = aset.yaml["name-prefix"]
        for attr in aset.attrs.values():
            want[c_name(prefix, attr.name)] = attr.value
        want[c_name("", aset.yaml["attr-max-name"])] = max(
            a.value for a in aset.attrs.values())
    want["MMEDGE_CMD_MAX"] = max(op.value for op in fam.msgs.values())

    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "v.c")
        with open(src, "w") as f:
            f.write("#include <stdio.h>\n#include <linux/mmedge.h>\n")
            f.write("int main(void)\n{\n")
            f.write('\tprintf("family %s %s\\n", MMEDGE_GENL_NAME, '
                    'MMEDGE_GENL_MCGRP_EVENTS);\n')
            for k in sorted(want):
                f.write(f'\tprintf("{k} %d\\n", (int){k});\n')
            f.write("\treturn 0;\n}\n")
        exe = os.path.join(tmp, "v")
        cc = subprocess.run(["cc", "-I", uapi, "-o", exe, src],
                            capture_output=True, text=True)
        got = {}
        if cc.returncode == 0:
            out = subprocess.run([exe], capture_output=True,
                                 text=True).stdout
            for line in out.splitlines():
                k, *v = line.split()
                got[k] = v if k == "family" else int(v[0])
        result(cc.returncode == 0,
               f"linux/mmedge.h defines all {len(want)} names the spec numbers",
               cc.stderr)
        if cc.returncode:
            return
        grp = [g for g in fam.yaml["mcast-groups"]["list"]]
        result(got["family"] == [fam.name, grp[0]["name"]],
               "family name and multicast group equal the header's",
               f"header {got['family']}, spec {fam.name} {grp[0]['name']}")
        bad = [f"{k}: header {got[k]}, spec {want[k]}"
               for k in sorted(want) if got[k] != want[k]]
        result(not bad, "every command and attribute value equals the "
               "header's", "\n".join(bad))
    # Every command the kernel registers is in the spec, by its flags.
    admin = sorted(op.name for op in fam.msgs.values()
                   if "admin-perm" in op.yaml.get("flags", []))
    result(admin == ["bus-set", "chan-set", "chan-set-multi"],
           "the set commands, and only they, are admin-perm", admin)


def events(ynl, name, want, timeout=5.0):
    """The queued events called NAME, once WANT of them came."""
    end = time.monotonic() + timeout
    while True:
        ynl.check_ntf()
        got = [e["msg"] for e in ynl.async_msg_queue if e["name"] == name]
        if len(got) >= want or time.monotonic() > end:
            return got
        time.sleep(0.05)


def live(tree, spec_path, mmctl, mmstream):
    from lib import YnlFamily, NlError

    ynl = ev = None

    def resolve():
        nonlocal ynl, ev
        # The host's lint stage validated the spec against the schema;
        # a second validation costs seconds in a TCG guest. Requests and
        # events on sockets of their own: YNL's request loop does not
        # expect a notification between two parts of a reply.
        ynl = YnlFamily(spec_path, schema="")
        ev = YnlFamily(spec_path, schema="")
        ev.ntf_subscribe("events")
    check("YNL resolves the family, its ops and its multicast group "
          "from the kernel", resolve)
    if ev is None:
        return

    # Channels live as long as their creator keeps the device open.
    stream = subprocess.Popen([mmstream, "-n", "0"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE)
    try:
        live_chans(ynl, ev, YnlFamily, NlError, spec_path, mmctl, stream)
    finally:
        if stream.poll() is None:
            stream.terminate()
            stream.wait(timeout=30)

    def chan_del():
        new = {e["chan-id"] for e in events(ev, "chan-new", 3, 0)}
        gone = {e["chan-id"] for e in events(ev, "chan-del", len(new))}
        assert new and new <= gone, (new, gone)
    check("chan-del: an event for each of mmstream's channels when it ends",
          chan_del)


def live_chans(ynl, ev, YnlFamily, NlError, spec_path, mmctl, stream):
    def chan_new():
        evs = events(ev, "chan-new", 3, 30)
        assert len(evs) >= 3, (evs, stream.poll())
        names = sorted(e["chan-name"] for e in evs)
        assert names == ["camera0", "imu0", "mic0"], names
        srcs = sorted(e["chan-src-type"] for e in evs)
        assert srcs == ["camera", "imu", "mic"], srcs
        assert all(e["chan-dir"] == "capture" for e in evs), evs
    check("chan-new: mmstream's three channels, with source and direction "
          "decoded by the spec's enums", chan_new)
    time.sleep(0.5)  # some traffic for the counters

    def mmctl_json(*args):
        out = subprocess.run([mmctl, "-j", *args], capture_output=True,
                             text=True, check=True, timeout=30).stdout
        return json.loads(out)

    devs = []

    def dev_dump():
        devs[:] = ynl.dump("dev-get", {})
        assert devs, "no instance"
        ref = {d["dev"]: d for d in mmctl_json("dev", "show")}
        for d in devs:
            m = ref[d["dev-name"]]
            assert d["dev-nr-chans"] == m["nr_chans"], (d, m)
            assert d["dev-bus-bw"] == m["bus_bw"], (d, m)
            assert d["dev-virtual"] in (0, 1), d
            assert d["dev-name"] == f"mmedge{d['dev-index']}", d
    check("dev-get dump: every instance, as mmctl dev show has it", dev_dump)

    def dev_do():
        d = ynl.do("dev-get", {"dev-index": devs[0]["dev-index"]})
        assert d == devs[0], (d, devs[0])
    check("dev-get do: the dumped instance", dev_do)

    chans = []

    def chan_dump():
        chans[:] = ynl.dump("chan-get", {"dev-index": 0})
        ref = {c["name"]: c for c in mmctl_json("chan", "show")}
        assert len(chans) == len(ref) >= 3, (chans, ref)
        for c in chans:
            m = ref[c["chan-name"]]
            assert c["chan-id"] == m["id"], (c, m)
            assert c["chan-weight"] == m["weight"], (c, m)
            assert c["chan-class"] == m["class"], (c, m)
            st = c["chan-stats"]
            assert len(st["wait-hist"]) == 16 * 8, st
            for k in ("bytes", "segments", "frames", "dropped", "errors",
                      "bw"):
                assert isinstance(st[k], int), (k, st)
    check("chan-get dump: every channel with its stats nest, as mmctl "
          "chan show has it", chan_dump)
    if not chans:
        return
    cam = chans[0]["chan-name"]
    cam_id = chans[0]["chan-id"]

    def chan_do():
        by_name = ynl.do("chan-get", {"dev-index": 0, "chan-name": cam})
        by_id = ynl.do("chan-get", {"dev-index": 0, "chan-id": cam_id})
        assert by_name["chan-id"] == cam_id, by_name
        assert by_id["chan-name"] == cam, by_id
    check("chan-get do: by chan-name and by chan-id", chan_do)

    def chan_set():
        old = ynl.do("chan-get", {"dev-index": 0, "chan-id": cam_id})
        ynl.do("chan-set", {"dev-index": 0, "chan-id": cam_id,
                            "chan-weight": 77})
        assert mmctl_json("chan", "show", cam)[0]["weight"] == 77
        evs = events(ev, "chan-changed", 1)
        assert evs, "no chan-changed event"
        e = evs[-1]
        assert e["chan-id"] == cam_id and e["chan-weight"] == 77, e
        assert e["event-old-weight"] == old["chan-weight"], e
        assert e["event-pid"] == os.getpid(), e
        ynl.do("chan-set", {"dev-index": 0, "chan-id": cam_id,
                            "chan-weight": old["chan-weight"]})
    check("chan-set: applied, and chan-changed names this process", chan_set)

    def chan_set_multi():
        a, b = chans[0], chans[1]
        ynl.do("chan-set-multi", {"dev-index": 0, "chan-list": {
            "chan-entry": [{"chan-id": a["chan-id"], "chan-weight": 31},
                           {"chan-name": b["chan-name"], "chan-weight": 32}]}})
        w = {c["name"]: c["weight"] for c in mmctl_json("chan", "show")}
        assert w[a["chan-name"]] == 31 and w[b["chan-name"]] == 32, w
        ynl.do("chan-set-multi", {"dev-index": 0, "chan-list": {
            "chan-entry": [{"chan-id": a["chan-id"],
                            "chan-weight": a["chan-weight"]},
                           {"chan-id": b["chan-id"],
                            "chan-weight": b["chan-weight"]}]}})
    check("chan-set-multi: a nest of chan-entry nests, both applied",
          chan_set_multi)

    def bad_weight():
        try:
            ynl.do("chan-set", {"dev-index": 0, "chan-id": cam_id,
                                "chan-weight": 0})
        except NlError as e:
            pol = e.nl_msg.extack.get("policy", {})
            assert e.error == 34, e
            assert e.nl_msg.extack.get("bad-attr") == ".chan-weight", e
            spec = ynl.attr_sets["mmedge"]["chan-weight"].yaml["checks"]
            assert pol.get("min-value") == spec["min"], (pol, spec)
            assert pol.get("max-value") == spec["max"], (pol, spec)
            return
        raise AssertionError("weight 0 accepted")
    check("chan-set weight 0: ERANGE, the kernel's policy is the spec's "
          "checks", bad_weight)

    def not_admin():
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            code = 0
            try:
                os.setgroups([])
                os.setgid(65534)
                os.setuid(65534)
                y = YnlFamily(spec_path, schema="")
                y.do("chan-set", {"dev-index": 0, "chan-id": cam_id,
                                  "chan-weight": 50})
                code = 0
            except NlError as e:
                code = e.error
            except Exception:
                code = 255
            os.write(w, str(code).encode())
            os._exit(0)
        os.close(w)
        code = int(os.read(r, 16) or b"255")
        os.waitpid(pid, 0)
        assert code == 1, f"errno {code}, want EPERM (1)"
        now = ynl.do("chan-get", {"dev-index": 0, "chan-id": cam_id})
        assert now["chan-weight"] == chans[0]["chan-weight"], now
    check("chan-set as nobody: EPERM (admin-perm), nothing changed",
          not_admin)

    def bus_set():
        bw = devs[0]["dev-bus-bw"]
        ynl.do("bus-set", {"dev-index": 0, "dev-bus-bw": 50000000})
        assert ynl.do("dev-get", {"dev-index": 0})["dev-bus-bw"] == 50000000
        ynl.do("bus-set", {"dev-index": 0, "dev-bus-bw": bw})
        try:
            ynl.do("bus-set", {"dev-index": 0, "dev-bus-bw": 10})
        except NlError as e:
            assert e.error == 34 or e.error == 22, e
            return
        raise AssertionError("bus 10 B/s accepted")
    check("bus-set: applied; below the spec's range refused", bus_set)


def main():
    args = sys.argv[1:]
    only = args and args[0] == "--spec-only"
    if only:
        args = args[1:]
    if len(args) != (3 if only else 4):
        print(__doc__, file=sys.stderr)
        return 2
    tree, spec = args[0], os.path.abspath(args[1])
    sys.path.insert(0, os.path.join(tree, "tools/net/ynl"))
    if only:
        spec_only(tree, spec, os.path.abspath(args[2]))
    else:
        live(tree, spec, args[2], args[3])
    print(f"1..{n}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

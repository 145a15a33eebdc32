"""`mqtool bundle`: what the archive holds, that no secret of a broker.conf full of them leaves in it, no
body without --with-bodies, and where it may be written."""

from __future__ import annotations

import io
import json
import tarfile

from golden import copy_store, expect, run_main

SECRETS = {
    "accessKey": "AKIDsecretaccess0001",
    "secretKey": "SKsecretvalue0002",
    "objectStoreAccessKey": "OSAKvalue0003",
    "objectStoreSecretKey": "OSSKvalue0004",
    "password": "hunter2-0005",
    "brokerPassword": "p4ss-0006",
    "authToken": "tok-0007",
    "sslPrivateKey": "privkey-0008",
    "tls.server.keyPassword": "kp-0009",
}
JSON_SECRETS = {
    "innerClientAuthenticationCredentials": {"accessKey": "innerAK0010", "secretKey": "innerSK0011"},
    "initAuthenticationUser": {"username": "rocketmq", "password": "initPW0012"},
}


def _broker_conf(path) -> list[str]:
    lines = ["brokerName=broker-a", "brokerClusterName=DefaultCluster", "mappedFileSizeCommitLog=1048576"]
    lines += [f"{k}={v}" for k, v in SECRETS.items()]
    lines += [f"{k}={json.dumps(v, separators=(',', ':'))}" for k, v in JSON_SECRETS.items()]
    lines += ["objectStoreEndpoint=https://bob:urlpw0013@s3.example", "# secretKey=oldsecret0014"]
    lines += ["deleteWhen : 04", "diskMaxUsedSpaceRatio 75"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    values = list(SECRETS.values()) + [
        "innerAK0010",
        "innerSK0011",
        "initPW0012",
        "urlpw0013",
        "oldsecret0014",
    ]
    return values


def _members(path) -> dict[str, bytes]:
    with tarfile.open(path, "r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers()}


def test_no_secret_leaves_and_keys_stay(tmp_path, capsys):
    root = copy_store("store-a", tmp_path / "s")
    conf = tmp_path / "broker.conf"
    secrets = _broker_conf(conf)
    # a secret echoed elsewhere: a config file of the store holding one of the values
    (root / "config" / "topics.json").write_text(
        (root / "config" / "topics.json")
        .read_text(encoding="utf-8")
        .replace("TopicTest", SECRETS["password"]),
        encoding="utf-8",
    )
    out = tmp_path / "b.tar.gz"
    code, stdout, err = run_main(
        [
            "bundle",
            "-s",
            str(root),
            "--broker-config",
            str(conf),
            "-o",
            str(out),
            "--now",
            "1795792000000",
            "--format",
            "json",
        ],
        capsys,
    )
    assert code == 0, err
    raw = io.BytesIO()
    with open(out, "rb") as fh:
        import gzip

        raw.write(gzip.decompress(fh.read()))
    everything = raw.getvalue()
    for value in secrets:
        assert value.encode() not in everything, value
    members = _members(out)
    conf_out = members["mqtool-bundle/broker.conf"].decode()
    for key in [*SECRETS, *JSON_SECRETS]:
        assert f"{key}=<redacted>" in conf_out
    assert "brokerName=broker-a" in conf_out and "https://<redacted>@s3.example" in conf_out
    assert json.loads(stdout)["secretValuesRedacted"] >= len(secrets)


def test_members_bodies_and_readme(tmp_path, capsys):
    root = copy_store("store-a", tmp_path / "s")
    out = tmp_path / "b.tar.gz"
    code, _, err = run_main(["bundle", "-s", str(root), "-o", str(out), "--now", "1795792000000"], capsys)
    assert code == 0, err
    names = list(_members(out))
    assert names[:6] == [
        f"mqtool-bundle/{n}"
        for n in (
            "README.txt",
            "info.json",
            "startup.json",
            "verify.json",
            "retention.json",
            "inventory.json",
        )
    ]
    members = _members(out)
    assert b"What is here" in members["mqtool-bundle/README.txt"]
    assert json.loads(members["mqtool-bundle/startup.json"])["verdict"] == "start"
    assert json.loads(members["mqtool-bundle/verify.json"])["clean"] is True
    inventory = {row["path"]: row for row in json.loads(members["mqtool-bundle/inventory.json"])}
    head = (root / "commitlog" / "00000000000000000000").read_bytes()[:4096]
    import hashlib

    assert inventory["commitlog/00000000000000000000"]["headSha256"] == hashlib.sha256(head).hexdigest()
    last = json.loads(members["mqtool-bundle/last-records.json"])
    assert len(last) == 20 and all("bodyBase64" not in r and "body" not in r for r in last)
    messages = [m for m in expect("store-a")["messages"] if m["kind"] == "MESSAGE"]
    assert [r["physicalOffset"] for r in last] == [m["physicalOffset"] for m in messages[-20:]]
    assert members["mqtool-bundle/checkpoint"] == (root / "checkpoint").read_bytes()
    # the same store and --now give the same members in the same order
    out2 = tmp_path / "b2.tar.gz"
    assert (
        run_main(
            [
                "bundle",
                "-s",
                str(root),
                "-o",
                str(out2),
                "--now",
                "1795792000000",
                "--with-bodies",
                "--records",
                "3",
            ],
            capsys,
        )[0]
        == 0
    )
    assert list(_members(out2)) == names
    bodies = json.loads(_members(out2)["mqtool-bundle/last-records.json"])
    assert len(bodies) == 3 and all(
        any(k.startswith("body") and k != "bodyCRC" and k != "bodyLength" for k in r) for r in bodies
    )


def test_output_never_in_the_store_nor_over_a_file(tmp_path, capsys):
    root = copy_store("store-a", tmp_path / "s")
    code, _, err = run_main(["bundle", "-s", str(root), "-o", str(root / "config" / "b.tar.gz")], capsys)
    assert code == 2 and "inside the store" in err
    assert not (root / "config" / "b.tar.gz").exists()
    existing = tmp_path / "there.tar.gz"
    existing.write_bytes(b"keep")
    code, _, err = run_main(["bundle", "-s", str(root), "-o", str(existing)], capsys)
    assert code == 2 and "--force" in err and existing.read_bytes() == b"keep"
    assert run_main(["bundle", "-s", str(root), "-o", str(existing), "--force"], capsys)[0] == 0
    assert existing.read_bytes()[:2] == b"\x1f\x8b"
    # a bundle mqtool wrote is replaced without --force, as every output option replaces its own kind
    assert run_main(["bundle", "-s", str(root), "-o", str(existing)], capsys)[0] == 0
    # the one output check: a link into the store, and a path through `..`, are refused too
    (tmp_path / "link").symlink_to(root / "config")
    for path in (tmp_path / "link" / "b.tar.gz", tmp_path / "x" / ".." / "s" / "b.tar.gz"):
        (tmp_path / "x").mkdir(exist_ok=True)
        code, _, err = run_main(["bundle", "-s", str(root), "-o", str(path)], capsys)
        assert code == 2 and "inside" in err, (path, err)
    assert not (root / "config" / "b.tar.gz").exists() and not (root / "b.tar.gz").exists()


def test_last_records_across_files():
    """More records than the last file holds: the files before it give the older ones, in order."""
    from golden import store_path

    from mqtool.oncall.bundle import last_records
    from store.storedir import Store

    messages = [m for m in expect("store-a")["messages"] if m["kind"] == "MESSAGE"]
    last_file = messages[-1]["file"]
    count = sum(m["file"] == last_file for m in messages) + 5
    with Store.open(store_path("store-a")) as store:
        got = last_records(store, count, with_bodies=False)
        assert last_records(store, 0, with_bodies=False) == []
    assert [r["physicalOffset"] for r in got] == [m["physicalOffset"] for m in messages[-count:]]

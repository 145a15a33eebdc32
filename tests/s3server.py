"""An S3-protocol server on 127.0.0.1 for the tests: moto's standalone server (the S3 HTTP API, in memory, in
a thread of the test process), a bucket, and golden stores uploaded into it. The tests read it only
through the standard AWS environment (AWS_ENDPOINT_URL, the access keys), as users' clusters do."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

BUCKET = "mqtool-stores"
SECRET = "mqtool-test-secret-6f1d2c"  # the tests check that no message ever shows it


@dataclass
class S3:
    endpoint: str
    env: dict[str, str]  # the AWS environment a client (or a Spark worker) needs

    def url(self, *names: str) -> str:
        return "/".join([f"s3://{BUCKET}", *names])

    def upload(self, local: Path, name: str) -> str:
        """Copy a store directory to s3://BUCKET/name (every file, as a backup job would), one PUT per
        file: moto's multipart completion fails under concurrent large parts."""
        import boto3

        client = boto3.client("s3", endpoint_url=self.endpoint, **_keys())
        for path in sorted(p for p in local.rglob("*") if p.is_file()):
            key = f"{name}/{path.relative_to(local).as_posix()}"
            with open(path, "rb") as fh:
                client.put_object(Bucket=BUCKET, Key=key, Body=fh)
        return self.url(name)

    def objects(self, prefix: str) -> dict[str, int]:
        import boto3

        client = boto3.client("s3", endpoint_url=self.endpoint, **_keys())
        pages = client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
        return {o["Key"]: o["Size"] for page in pages for o in page.get("Contents", [])}


def _keys() -> dict[str, str]:
    return {"aws_access_key_id": "mqtool", "aws_secret_access_key": SECRET, "region_name": "us-east-1"}


@contextlib.contextmanager
def s3_server() -> Iterator[S3]:
    """moto's ThreadedMotoServer on a free port with an empty bucket; stopped on exit."""
    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        boto3.client("s3", endpoint_url=endpoint, **_keys()).create_bucket(Bucket=BUCKET)
        env = {
            "AWS_ENDPOINT_URL": endpoint,
            "AWS_ACCESS_KEY_ID": "mqtool",
            "AWS_SECRET_ACCESS_KEY": SECRET,
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_EC2_METADATA_DISABLED": "true",
        }
        yield S3(endpoint, env)
    finally:
        server.stop()


def with_env(extra: dict[str, str]) -> dict[str, str]:
    return dict(os.environ, **extra)

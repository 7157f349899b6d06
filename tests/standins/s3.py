"""A local S3 server (moto's, speaking the S3 wire protocol) with one bucket, for the index on
object storage. Our code only sees the standard AWS_* variables, exactly as against a real bucket.
`outage()` stops the server and starts it again on the same port, with the bucket's contents
(moto keeps them in this process): clients get connection errors meanwhile, as in a network outage.
"""
from __future__ import annotations

import logging
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import boto3
from moto.server import ThreadedMotoServer


@dataclass
class LocalS3:
    endpoint: str
    bucket: str
    server: ThreadedMotoServer = field(repr=False)

    @contextmanager
    def outage(self) -> Iterator[None]:
        """The server is down inside the block, and back (same port, same objects) after it."""
        host, port = self.server.get_host_and_port()
        self.server.stop()
        try:
            yield
        finally:
            self.server = ThreadedMotoServer(ip_address=host, port=port, verbose=False)
            self.server.start()

    def env(self) -> dict[str, str]:
        """The variables a process needs to reach the bucket (what a deployment sets)."""
        return {
            "AWS_ACCESS_KEY_ID": "docsbot-test", "AWS_SECRET_ACCESS_KEY": "docsbot-test-secret",
            "AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL": self.endpoint, "AWS_ALLOW_HTTP": "true",
        }

    def uri(self, prefix: str) -> str:
        return f"s3://{self.bucket}/{prefix}"

    def keys(self, prefix: str) -> list[str]:
        client = boto3.client("s3", endpoint_url=self.endpoint, **_credentials(self.env()))
        pages = client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix)
        return [item["Key"] for page in pages for item in page.get("Contents", [])]


def _credentials(env: dict[str, str]) -> dict[str, str]:
    return {"aws_access_key_id": env["AWS_ACCESS_KEY_ID"], "aws_secret_access_key": env["AWS_SECRET_ACCESS_KEY"],
            "region_name": env["AWS_REGION"]}


@contextmanager
def local_s3() -> Iterator[LocalS3]:
    """A server with one empty bucket, named for its port: a process keeps an index URI's file
    system (rag/index_summary.py), so a bucket of the same name on the previous test's server,
    stopped since, would cost each later test ~25 s per listing in connection retries."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one access-log line per object request
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    bucket = f"docsbot-{port}"
    s3 = LocalS3(f"http://{host}:{port}", bucket, server)
    # moto keeps every server's objects in this process: start each test from an empty store.
    urllib.request.urlopen(urllib.request.Request(f"{s3.endpoint}/moto-api/reset", method="POST")).close()
    boto3.client("s3", endpoint_url=s3.endpoint, **_credentials(s3.env())).create_bucket(Bucket=bucket)
    try:
        yield s3
    finally:
        s3.server.stop()

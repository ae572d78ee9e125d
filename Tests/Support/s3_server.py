#!/usr/bin/env python3
"""moto's S3 server on 127.0.0.1 with signatures enforced, set up for the tests.

Usage: s3_server.py PORT STATE_FILE [--objects SPEC]...

Starts moto (ThreadedMotoServer) with INITIAL_NO_AUTH_ACTION_COUNT so that only the set-up
calls go unauthenticated: an IAM user with an allow-all policy and an access key are created,
then every request must carry a valid Signature Version 4. With that key (signed requests) it
creates bucket "models" and the objects of each SPEC:

  KEY=SIZE            SIZE deterministic random bytes (seeded by KEY), one PUT
  KEY=SIZE:multipart  the same bytes uploaded in two parts (its ETag is not an MD5)
  PREFIX*COUNT=SIZE   COUNT objects PREFIX00000 ... of SIZE bytes each
  KEY=SIZE:ALGO       one PUT with S3 checksum ALGO (sha256, sha1, crc32, crc32c, crc64nvme),
                      computed here (boto3 needs awscrt for CRC32C and CRC64NVME, which moto
                      also lacks: it would store a CRC32 under their names) and sent with
                      x-amz-sdk-checksum-algorithm, which moto stores and GET/HEAD return
                      under x-amz-checksum-mode: ENABLED
  KEY=SIZE:ALGO:corrupt  the same, but the checksum is of the bytes with byte SIZE/2 flipped:
                      an object changed behind its checksum
  KEY=SIZE:multipart:ALGO  two parts with a COMPOSITE checksum (sha256, sha1 or crc32: boto3
                      computes those per part)
  KEY=SIZE:multipart:ALGO:corrupt  the same, then byte SIZE/2 of the stored object is flipped
                      in moto's memory, its ETag and checksums left as they were

Without a checksum of its own, boto3 sends a CRC32 with every PUT (moto keeps it), and
multipart uploads carry none.
  PREFIX*COUNT=SIZE:direct  the same objects stored through moto's backend in this process, not
                      a PUT each (100,000 in seconds rather than minutes); listed and served alike

STATE_FILE receives JSON: {"endpoint", "access_key", "secret_key", "region", "session": {...}}
where "session" is a temporary credential of an assumed role (access key, secret, token). Then it serves
until SIGTERM or SIGINT.
"""
import base64
import hashlib
import json
import os
import signal
import sys
import threading
import zlib

port, state_file, specs = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
os.environ["INITIAL_NO_AUTH_ACTION_COUNT"] = "4"
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")

import boto3  # noqa: E402
from moto.server import ThreadedMotoServer  # noqa: E402

server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
server.start()
endpoint = f"http://127.0.0.1:{port}"


def client(name, **credentials):
    return boto3.client(name, endpoint_url=endpoint, region_name="us-east-1",
                        aws_access_key_id=credentials.get("key", "setup"),
                        aws_secret_access_key=credentials.get("secret", "setup"),
                        aws_session_token=credentials.get("token"))


# The unauthenticated set-up calls (exactly INITIAL_NO_AUTH_ACTION_COUNT of them).
iam = client("iam")
iam.create_user(UserName="tester")
policy = iam.create_policy(PolicyName="all", PolicyDocument=json.dumps(
    {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
iam.attach_user_policy(UserName="tester", PolicyArn=policy["Policy"]["Arn"])
key = iam.create_access_key(UserName="tester")["AccessKey"]
credentials = {"key": key["AccessKeyId"], "secret": key["SecretAccessKey"]}

s3 = client("s3", **credentials)
s3.create_bucket(Bucket="models")


def content(name, size):
    seed = hashlib.sha256(name.encode()).digest()
    out = bytearray()
    block = 0
    while len(out) < size:
        out += hashlib.sha256(seed + block.to_bytes(8, "little")).digest()
        block += 1
    return bytes(out[:size])


def crc_table(polynomial):
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ polynomial if crc & 1 else crc >> 1
        table.append(crc)
    return table


CRC = {"crc32c": (crc_table(0x82F63B78), 0xFFFFFFFF, 4),
       "crc64nvme": (crc_table(0x9A6C9329AC4BC9B5), 0xFFFFFFFFFFFFFFFF, 8)}


def checksum(algo, body):
    """The S3 checksum value (base64 of the big-endian bytes) of body."""
    if algo in CRC:
        table, ones, width = CRC[algo]
        crc = ones
        for byte in body:
            crc = (crc >> 8) ^ table[(crc ^ byte) & 0xFF]
        raw = (crc ^ ones).to_bytes(width, "big")
    elif algo == "crc32":
        raw = zlib.crc32(body).to_bytes(4, "big")
    else:
        raw = hashlib.new(algo, body).digest()
    return base64.b64encode(raw).decode()


# moto reads a PUT's checksum algorithm from x-amz-sdk-checksum-algorithm, which boto3 sends
# only when it computes the checksum itself.
sdk_algorithm = {}
s3.meta.events.register("before-sign.s3.PutObject", lambda request, **_: request.headers.__setitem__(
    "x-amz-sdk-checksum-algorithm", sdk_algorithm["value"]) if sdk_algorithm.get("value") else None)

for spec in specs:
    name, _, size_text = spec.partition("=")
    options = size_text.split(":")[1:]
    multipart = "multipart" in options
    corrupt = "corrupt" in options
    algo = next((option for option in options if option not in ("multipart", "corrupt", "direct")), None)
    direct = "direct" in options
    size = int(size_text.split(":")[0])
    if "*" in name and direct:
        from moto.core import DEFAULT_ACCOUNT_ID  # noqa: E402
        from moto.s3.models import s3_backends  # noqa: E402
        backend = s3_backends[DEFAULT_ACCOUNT_ID]["global"]
        prefix, _, count = name.partition("*")
        for index in range(int(count)):
            backend.put_object("models", f"{prefix}{index:05d}", content(f"{prefix}{index:05d}", size))
    elif "*" in name:
        prefix, _, count = name.partition("*")
        for index in range(int(count)):
            s3.put_object(Bucket="models", Key=f"{prefix}{index:05d}", Body=content(f"{prefix}{index:05d}", size))
    elif multipart:
        body = content(name, size)
        half = max(5 << 20, size // 2)
        extra = {"ChecksumAlgorithm": algo.upper()} if algo else {}
        upload = s3.create_multipart_upload(Bucket="models", Key=name, **extra)
        parts = []
        for number, start in enumerate(range(0, size, half), start=1):
            part = s3.upload_part(Bucket="models", Key=name, UploadId=upload["UploadId"], PartNumber=number,
                                  Body=body[start:start + half], **extra)
            entry = {"ETag": part["ETag"], "PartNumber": number}
            if algo:
                entry[f"Checksum{algo.upper()}"] = part[f"Checksum{algo.upper()}"]
            parts.append(entry)
        s3.complete_multipart_upload(Bucket="models", Key=name, UploadId=upload["UploadId"],
                                     MultipartUpload={"Parts": parts})
        if corrupt:
            from moto.core import DEFAULT_ACCOUNT_ID
            from moto.s3.models import s3_backends
            stored = s3_backends[DEFAULT_ACCOUNT_ID]["aws"].get_object("models", name)
            changed = bytearray(stored.value)
            changed[size // 2] ^= 1
            stored.value = bytes(changed)
    elif algo:
        body = content(name, size)
        summed = bytearray(body)
        if corrupt:
            summed[size // 2] ^= 1
        sdk_algorithm["value"] = algo.upper()
        s3.put_object(Bucket="models", Key=name, Body=body, **{f"Checksum{algo.upper()}": checksum(algo, bytes(summed))})
        sdk_algorithm["value"] = None
    else:
        s3.put_object(Bucket="models", Key=name, Body=content(name, size))

# A temporary credential (with a session token) that moto checks: an assumed role's.
signed_iam = client("iam", **credentials)
role = signed_iam.create_role(RoleName="reader", AssumeRolePolicyDocument=json.dumps(
    {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "sts:AssumeRole"}]}))
signed_iam.attach_role_policy(RoleName="reader", PolicyArn=policy["Policy"]["Arn"])
session = client("sts", **credentials).assume_role(RoleArn=role["Role"]["Arn"], RoleSessionName="tests",
                                                   DurationSeconds=3600)["Credentials"]
state = {"endpoint": endpoint, "access_key": credentials["key"], "secret_key": credentials["secret"],
         "region": "us-east-1",
         "session": {"access_key": session["AccessKeyId"], "secret_key": session["SecretAccessKey"],
                     "token": session["SessionToken"]}}
with open(state_file + ".tmp", "w") as handle:
    json.dump(state, handle)
os.rename(state_file + ".tmp", state_file)

stop = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stop.set())
signal.signal(signal.SIGINT, lambda *_: stop.set())
stop.wait()
server.stop()

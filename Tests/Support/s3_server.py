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
  PREFIX*COUNT=SIZE:direct  the same objects stored through moto's backend in this process, not
                      a PUT each (100,000 in seconds rather than minutes); listed and served alike

STATE_FILE receives JSON: {"endpoint", "access_key", "secret_key", "region", "session": {...}}
where "session" is a temporary credential of an assumed role (access key, secret, token). Then it serves
until SIGTERM or SIGINT.
"""
import hashlib
import json
import os
import signal
import sys
import threading

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


for spec in specs:
    name, _, size_text = spec.partition("=")
    multipart = size_text.endswith(":multipart")
    direct = size_text.endswith(":direct")
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
        upload = s3.create_multipart_upload(Bucket="models", Key=name)
        parts = []
        for number, start in enumerate(range(0, size, half), start=1):
            part = s3.upload_part(Bucket="models", Key=name, UploadId=upload["UploadId"], PartNumber=number,
                                  Body=body[start:start + half])
            parts.append({"ETag": part["ETag"], "PartNumber": number})
        s3.complete_multipart_upload(Bucket="models", Key=name, UploadId=upload["UploadId"],
                                     MultipartUpload={"Parts": parts})
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

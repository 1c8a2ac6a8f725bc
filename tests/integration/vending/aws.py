"""boto3 helper for the vending tests (run with the image's pyenv Python).

aws.py setup ENDPOINT ROLE_PREFIXES_JSON
    user "floe" with an allow-all policy (the first three, unauthenticated
    calls), buckets "warehouse" and "other", role "vend" whose policy allows
    objects under each of ROLE_PREFIXES ("bucket/prefix") only.  Prints
    {AccessKeyId, SecretAccessKey, RoleArn}.
aws.py ops ENDPOINT CREDS_JSON OPS_JSON
    runs [{op: put|get|list|delete, bucket, key|prefix, body?}] with the given
    credentials (AccessKeyId, SecretAccessKey, SessionToken?) and prints
    [{ok, code, body?}] -- what a client holding vended credentials sees.
"""
import json
import sys

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

REGION = "us-east-1"


def client(svc, ep, ak, sk, token=None):
    return boto3.client(svc, endpoint_url=ep, region_name=REGION, aws_access_key_id=ak,
                        aws_secret_access_key=sk, aws_session_token=token,
                        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))


def setup(ep, prefixes):
    iam = client("iam", ep, "bootstrap", "bootstrap")
    iam.create_user(UserName="floe")
    key = iam.create_access_key(UserName="floe")["AccessKey"]
    iam.put_user_policy(UserName="floe", PolicyName="all", PolicyDocument=json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
    ak, sk = key["AccessKeyId"], key["SecretAccessKey"]
    s3 = client("s3", ep, ak, sk)
    for b in ("warehouse", "other"):
        s3.create_bucket(Bucket=b)
    iam = client("iam", ep, ak, sk)
    role = iam.create_role(RoleName="vend", AssumeRolePolicyDocument=json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "sts:AssumeRole"}]}))
    iam.put_role_policy(RoleName="vend", PolicyName="tables", PolicyDocument=json.dumps({
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Action": ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"],
             "Resource": [f"arn:aws:s3:::{p}/*" for p in prefixes]},
            {"Effect": "Allow", "Action": ["s3:ListBucket"],
             "Resource": sorted({f"arn:aws:s3:::{p.split('/')[0]}" for p in prefixes})}]}))
    print(json.dumps({"AccessKeyId": ak, "SecretAccessKey": sk, "RoleArn": role["Role"]["Arn"]}))


def ops(ep, creds, todo):
    s3 = client("s3", ep, creds["AccessKeyId"], creds["SecretAccessKey"], creds.get("SessionToken"))
    out = []
    for o in todo:
        try:
            if o["op"] == "put":
                s3.put_object(Bucket=o["bucket"], Key=o["key"], Body=o.get("body", "x").encode())
                out.append({"ok": True})
            elif o["op"] == "get":
                r = s3.get_object(Bucket=o["bucket"], Key=o["key"])
                out.append({"ok": True, "body": r["Body"].read().decode()})
            elif o["op"] == "delete":
                s3.delete_object(Bucket=o["bucket"], Key=o["key"])
                out.append({"ok": True})
            elif o["op"] == "list":
                r = s3.list_objects_v2(Bucket=o["bucket"], Prefix=o["prefix"])
                out.append({"ok": True, "keys": [c["Key"] for c in r.get("Contents", [])]})
        except ClientError as e:
            out.append({"ok": False, "code": e.response["Error"]["Code"]})
    print(json.dumps(out))


if __name__ == "__main__":
    if sys.argv[1] == "setup":
        setup(sys.argv[2], json.loads(sys.argv[3]))
    elif sys.argv[1] == "ops":
        ops(sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4]))

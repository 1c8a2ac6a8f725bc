"""moto_server with AWS's canonical URI and query string (used by lib/moto.mjs).

moto 5.2.1 checks a request's signature against the URL werkzeug rebuilds
for it (request.url), which is IRI-decoded: a query value sent as "a%2F"
(as AWS's SigV4 rules require, "encode the forward slash everywhere except
in the object key name") reaches the check as "a/", and a key sent as
"x%2By" as "x+y", so every correctly signed ListObjectsV2 with a prefix and
every key with '+' or '=' fails with SignatureDoesNotMatch; boto3's own S3
client hits the same wall in moto's auth mode.  This shim gives moto the
raw request target (path and query) the client sent and changes nothing
else: signature checks stay on and are computed by moto (botocore) itself.

Usage: python3 moto_server.py -H 127.0.0.1 -p PORT (the moto_server flags).
"""
import sys

from werkzeug.wrappers import Request

_url = Request.url


def _raw_url(self):
    url = _url.fget(self)
    raw = self.environ.get("RAW_URI") or self.environ.get("REQUEST_URI")
    if not raw or not raw.startswith("/"):
        base = url.split("?", 1)[0]
        query = self.query_string.decode("latin-1")
        return base + ("?" + query if query else "")
    return self.host_url.rstrip("/") + raw


Request.url = property(_raw_url)

from moto.server import main  # noqa: E402  (after the patch)

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Reads an Avro container file with Debian's python3-avro (run it with
/usr/bin/python3) and prints its header metadata and records as JSON, in
the normalised form the write-path node tests compare: integers as decimal
strings, bytes as upper-case hex, floats as '%.17g' or 'NaN', dates as days,
timestamps as microseconds, decimals as their unscaled integer.

  read_avro.py FILE              prints FILE's {"meta", "records"}
  read_avro.py --serve REQ RESP  reads files until REQ ends: REQ is a pipe of
                                 requests, one JSON string (a path) a line;
                                 each answer on the pipe RESP is its length in
                                 bytes, a newline, then the JSON of the file or
                                 {"error": "..."} (../lib/pyavro.mjs)
"""
import datetime
import decimal
import json
import math
import os
import sys
import warnings

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def norm(v):
    if v is None or isinstance(v, bool) or isinstance(v, str):
        return v
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return "NaN" if math.isnan(v) else format(v, ".17g")
    if isinstance(v, (bytes, bytearray)):
        return v.hex().upper()
    if isinstance(v, decimal.Decimal):
        sign, digits, exp = v.as_tuple()
        unscaled = int("".join(map(str, digits)) or "0")
        return str(-unscaled if sign else unscaled)
    if isinstance(v, datetime.datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=datetime.timezone.utc)
        return str((v - EPOCH) // datetime.timedelta(microseconds=1))
    if isinstance(v, datetime.date):
        return str((v - datetime.date(1970, 1, 1)).days)
    if isinstance(v, list):
        return [norm(x) for x in v]
    if isinstance(v, dict):
        return {k: norm(x) for k, x in v.items()}
    raise TypeError(type(v))


def read(path):
    import avro.datafile
    import avro.io

    with open(path, "rb") as f:
        reader = avro.datafile.DataFileReader(f, avro.io.DatumReader())
        meta = {k: v.decode("utf-8", "replace") if k != "binary-meta" else v.hex() for k, v in reader.meta.items()}
        records = [norm(r) for r in reader]
    return {"meta": meta, "records": records}


def serve(req_path, resp_path):
    # The pipes are opened before anything that could fail (avro is imported at the first
    # request): the client blocks in its own opens until this side has made them.
    req = open(req_path, "rb")
    resp = open(resp_path, "wb")
    for line in req:
        try:
            out = json.dumps(read(json.loads(line)))
        except Exception as e:  # the client raises it, naming the file
            out = json.dumps({"error": f"{type(e).__name__}: {e}"})
        data = out.encode("utf-8")
        resp.write(b"%d\n" % len(data))
        resp.write(data)
        resp.flush()
    # The client has closed its end: exit at once, with RESP still open, so that the
    # end of RESP the client waits for comes with the exit itself, not before a shutdown
    # of the interpreter (a test run counts processes left behind right after the client).
    os._exit(0)


def main():
    warnings.simplefilter("ignore")
    if sys.argv[1] == "--serve":
        serve(sys.argv[2], sys.argv[3])
    else:
        json.dump(read(sys.argv[1]), sys.stdout)


main()

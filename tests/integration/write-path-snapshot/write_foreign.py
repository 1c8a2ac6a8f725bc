"""Writes a parent snapshot the way another engine would, with Debian's
python3-avro (run it with /usr/bin/python3), for the snapshot builder to
append on top of: a v2 data manifest (EXISTING, ADDED and DELETED entries,
written under an older partition spec id 1), a v2 delete manifest (position
and equality deletes) and a deflate manifest list naming both, with
partition summaries and key metadata the builder must carry unchanged.

Usage: write_foreign.py DIR LOCATION
Files go to DIR/metadata/, named by LOCATION/metadata/...; prints the list
records as written (bytes as upper-case hex) and the live file sizes."""
import json
import sys
import warnings

import avro.datafile
import avro.io
import avro.schema


def opt(name, typ, fid):
    return {"name": name, "type": ["null", typ], "default": None, "field-id": fid}


def int_map(name, fid, kid, vid, vtype):
    return opt(name, {"type": "array", "logicalType": "map", "items": {
        "type": "record", "name": "k%d_v%d" % (kid, vid), "fields": [
            {"name": "key", "type": "int", "field-id": kid},
            {"name": "value", "type": vtype, "field-id": vid}]}}, fid)


ENTRY = {"type": "record", "name": "manifest_entry", "fields": [
    {"name": "status", "type": "int", "field-id": 0},
    opt("snapshot_id", "long", 1),
    opt("sequence_number", "long", 3),
    opt("file_sequence_number", "long", 4),
    {"name": "data_file", "field-id": 2, "type": {"type": "record", "name": "r2", "fields": [
        {"name": "content", "type": "int", "field-id": 134},
        {"name": "file_path", "type": "string", "field-id": 100},
        {"name": "file_format", "type": "string", "field-id": 101},
        {"name": "partition", "field-id": 102, "type": {"type": "record", "name": "r102", "fields": []}},
        {"name": "record_count", "type": "long", "field-id": 103},
        {"name": "file_size_in_bytes", "type": "long", "field-id": 104},
        int_map("column_sizes", 108, 117, 118, "long"),
        int_map("value_counts", 109, 119, 120, "long"),
        int_map("null_value_counts", 110, 121, 122, "long"),
        int_map("nan_value_counts", 137, 138, 139, "long"),
        int_map("lower_bounds", 125, 126, 127, "bytes"),
        int_map("upper_bounds", 128, 129, 130, "bytes"),
        opt("key_metadata", "bytes", 131),
        opt("split_offsets", {"type": "array", "items": "long", "element-id": 133}, 132),
        opt("equality_ids", {"type": "array", "items": "int", "element-id": 136}, 135),
        opt("sort_order_id", "int", 140)]}}]}

LIST = {"type": "record", "name": "manifest_file", "fields": [
    {"name": "manifest_path", "type": "string", "field-id": 500},
    {"name": "manifest_length", "type": "long", "field-id": 501},
    {"name": "partition_spec_id", "type": "int", "field-id": 502},
    {"name": "content", "type": "int", "field-id": 517},
    {"name": "sequence_number", "type": "long", "field-id": 515},
    {"name": "min_sequence_number", "type": "long", "field-id": 516},
    {"name": "added_snapshot_id", "type": "long", "field-id": 503},
    {"name": "added_files_count", "type": "int", "field-id": 504},
    {"name": "existing_files_count", "type": "int", "field-id": 505},
    {"name": "deleted_files_count", "type": "int", "field-id": 506},
    {"name": "added_rows_count", "type": "long", "field-id": 512},
    {"name": "existing_rows_count", "type": "long", "field-id": 513},
    {"name": "deleted_rows_count", "type": "long", "field-id": 514},
    opt("partitions", {"type": "array", "element-id": 508, "items": {
        "type": "record", "name": "r508", "fields": [
            {"name": "contains_null", "type": "boolean", "field-id": 509},
            opt("contains_nan", "boolean", 518),
            opt("lower_bound", "bytes", 510),
            opt("upper_bound", "bytes", 511)]}}, 507),
    opt("key_metadata", "bytes", 519)]}


def entry(status, snap, seq, content, path, records, size, eq=None):
    return {"status": status, "snapshot_id": snap, "sequence_number": seq,
            "file_sequence_number": seq, "data_file": {
                "content": content, "file_path": path, "file_format": "PARQUET", "partition": {},
                "record_count": records, "file_size_in_bytes": size,
                "column_sizes": [{"key": 1, "value": size // 2}], "value_counts": None,
                "null_value_counts": None, "nan_value_counts": None,
                "lower_bounds": [{"key": 1, "value": b"\x01\x00\x00\x00\x00\x00\x00\x00"}],
                "upper_bounds": None, "key_metadata": None, "split_offsets": [4],
                "equality_ids": eq, "sort_order_id": None if content == 1 else 0}}


def write(path, schema, meta, records):
    with open(path, "wb") as f:
        w = avro.datafile.DataFileWriter(f, avro.io.DatumWriter(), avro.schema.parse(json.dumps(schema)),
                                         codec="deflate")
        for k, v in meta.items():
            w.set_meta(k, v.encode())
        for r in records:
            w.append(r)
        w.close()
    with open(path, "rb") as f:
        return len(f.read())


def main():
    warnings.simplefilter("ignore")
    out, loc = sys.argv[1], sys.argv[2]
    head = {"schema": json.dumps({"type": "struct", "schema-id": 0, "fields": []}),
            "partition-spec": "[]", "partition-spec-id": "1", "format-version": "2"}
    data = [entry(0, 40, 3, 0, loc + "/data/old-0.parquet", 200, 2000),
            entry(1, 50, None, 0, loc + "/data/new-0.parquet", 100, 1000),
            entry(2, 50, 3, 0, loc + "/data/gone-0.parquet", 300, 3000)]
    deletes = [entry(1, 50, None, 1, loc + "/data/pos-0.parquet", 4, 40),
               entry(1, 50, None, 1, loc + "/data/pos-1.parquet", 6, 60),
               entry(1, 50, None, 2, loc + "/data/eq-0.parquet", 9, 90, [1])]
    dlen = write(out + "/metadata/foreign-m-data.avro", ENTRY, dict(head, content="data"), data)
    xlen = write(out + "/metadata/foreign-m-deletes.avro", ENTRY, dict(head, content="deletes"), deletes)
    lists = [
        {"manifest_path": loc + "/metadata/foreign-m-data.avro", "manifest_length": dlen,
         "partition_spec_id": 1, "content": 0, "sequence_number": 5, "min_sequence_number": 3,
         "added_snapshot_id": 50, "added_files_count": 1, "existing_files_count": 1,
         "deleted_files_count": 1, "added_rows_count": 100, "existing_rows_count": 200,
         "deleted_rows_count": 300,
         "partitions": [{"contains_null": True, "contains_nan": None,
                         "lower_bound": b"\x01\x00\x00\x00", "upper_bound": b"\x09\x00\x00\x00"}],
         "key_metadata": b"\xca\xfe\x00"},
        {"manifest_path": loc + "/metadata/foreign-m-deletes.avro", "manifest_length": xlen,
         "partition_spec_id": 1, "content": 1, "sequence_number": 5, "min_sequence_number": 5,
         "added_snapshot_id": 50, "added_files_count": 3, "existing_files_count": 0,
         "deleted_files_count": 0, "added_rows_count": 19, "existing_rows_count": 0,
         "deleted_rows_count": 0, "partitions": None, "key_metadata": None},
    ]
    write(out + "/metadata/foreign-list.avro", LIST,
          {"snapshot-id": "50", "parent-snapshot-id": "null", "sequence-number": "5",
           "format-version": "2"}, lists)

    def hexify(v):
        if isinstance(v, bytes):
            return v.hex().upper()
        if isinstance(v, list):
            return [hexify(x) for x in v]
        if isinstance(v, dict):
            return {k: hexify(x) for k, x in v.items()}
        return v
    json.dump({"list": loc + "/metadata/foreign-list.avro", "records": hexify(lists),
               "live_size": 2000 + 1000 + 40 + 60 + 90}, sys.stdout)


main()

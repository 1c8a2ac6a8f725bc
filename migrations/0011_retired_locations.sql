-- 0011_retired_locations: where tables left the catalog with their files in
-- place, and when.
--
-- A drop without purge and an unregister leave a table's files where they
-- are: for another catalog to register, or for the user. A new table at the
-- same place (the default location of the same name) would otherwise see
-- them as its own orphans, and orphan cleanup would delete them. Orphan
-- cleanup keeps every object under a location that overlaps a retired one
-- and is older than that retirement (catalog/maintain.c).
CREATE TABLE retired_location (
    warehouse_id  uuid NOT NULL REFERENCES warehouse(id) ON DELETE CASCADE,
    location      text COLLATE "C" NOT NULL,
    retired_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX retired_location_wh ON retired_location (warehouse_id, location);

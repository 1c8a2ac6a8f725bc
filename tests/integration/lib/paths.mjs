// Where things live: the repository root, the shared reference directory beside
// it (CI checks out `shared/` at `<repo>/../shared`), and the floe binary.
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const here = path.dirname(fileURLToPath(import.meta.url));

export const integrationDir = path.resolve(here, '..');
export const repoRoot = path.resolve(here, '..', '..', '..');
export const sharedDir = process.env.FLOE_SHARED_DIR
  ? path.resolve(process.env.FLOE_SHARED_DIR)
  : path.resolve(repoRoot, '..', 'shared');
export const floeBin = process.env.FLOE_BIN
  ? path.resolve(process.env.FLOE_BIN)
  : path.join(repoRoot, 'build', 'server', 'floe');
// Debian's interpreter: it has python3-yaml; the image's pyenv python3 may not.
export const systemPython = process.env.FLOE_TEST_PYTHON || '/usr/bin/python3';

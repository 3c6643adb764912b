// n8n-core reads its configuration from the environment the first time a config class is resolved,
// so this module is imported before anything from n8n-core.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const folder = mkdtempSync(join(tmpdir(), 'gs-n8n-'));
process.env.N8N_USER_FOLDER ??= folder;
process.env.N8N_BINARY_DATA_STORAGE_PATH ??= join(folder, 'binaryData');
process.env.N8N_ENCRYPTION_KEY ??= 'generation-service-tests';
process.env.N8N_ENFORCE_SETTINGS_FILE_PERMISSIONS ??= 'false';
process.env.N8N_LOG_LEVEL ??= 'silent';
process.env.N8N_DIAGNOSTICS_ENABLED ??= 'false';

/**
 * End-to-end tests (`npm run test:e2e`): the packed package inside real n8n servers, one line after
 * the other (env E2E_LINES, default "1 2"). Not part of `npm test`: its files end in .e2e.ts.
 * @type {import('jest').Config}
 */
module.exports = {
	testEnvironment: 'node',
	roots: ['<rootDir>/test/e2e'],
	testMatch: ['**/*.e2e.ts'],
	transform: {
		'^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }],
	},
	// Starting n8n takes 5-10 s, installing a line minutes (npm run test:e2e installs before jest).
	testTimeout: 180000,
	maxWorkers: 1,
};

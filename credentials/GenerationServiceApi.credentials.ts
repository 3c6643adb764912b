import type {
	IAuthenticateGeneric,
	Icon,
	ICredentialTestRequest,
	ICredentialType,
	INodeProperties,
} from 'n8n-workflow';

export class GenerationServiceApi implements ICredentialType {
	name = 'generationServiceApi';

	displayName = 'Generation Service API';

	icon: Icon = {
		light: 'file:../icons/generationService.svg',
		dark: 'file:../icons/generationService.dark.svg',
	};

	documentationUrl =
		'https://github.com/generation-service/n8n-nodes-generation-service?tab=readme-ov-file#credentials';

	// Lets the stock HTTP Request node call endpoints this pack does not wrap, with the same key.
	httpRequestNode = {
		name: 'Generation Service',
		docsUrl:
			'https://github.com/generation-service/n8n-nodes-generation-service?tab=readme-ov-file#credentials',
		apiBaseUrlPlaceholder: 'https://api.example.com/v1/',
	};

	properties: INodeProperties[] = [
		{
			displayName: 'API Key',
			name: 'apiKey',
			type: 'string',
			typeOptions: { password: true },
			default: '',
			required: true,
			description: 'The API key from your Generation Service account. It is sent as a Bearer token.',
		},
		{
			displayName: 'Base URL',
			name: 'baseUrl',
			type: 'string',
			default: 'http://127.0.0.1:4010',
			required: true,
			placeholder: 'https://api.example.com',
			description:
				'The address of the service, without the /v1 path. The local sandbox (npm run sandbox) prints its own.',
		},
	];

	authenticate: IAuthenticateGeneric = {
		type: 'generic',
		properties: {
			headers: {
				Authorization: '=Bearer {{$credentials.apiKey}}',
			},
		},
	};

	// GET /v1/models is free and answers 401 for a missing, unknown or revoked key.
	test: ICredentialTestRequest = {
		request: {
			baseURL: '={{$credentials.baseUrl.replace(/\\/+$/, "").replace(/\\/v1$/, "")}}',
			url: '/v1/models',
			method: 'GET',
		},
	};
}

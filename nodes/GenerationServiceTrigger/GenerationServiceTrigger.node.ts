import { createHash, timingSafeEqual } from 'crypto';
import type {
	IDataObject,
	INodeType,
	INodeTypeDescription,
	IWebhookFunctions,
	IWebhookResponseData,
} from 'n8n-workflow';
import { NodeConnectionTypes } from 'n8n-workflow';
import { MODALITY_OPTIONS } from '../shared/fields';

const EVENTS = ['completed', 'failed'];
/** Deliveries remembered to spot a redelivery (§6 leaves retries unshown, so any may repeat). */
const REMEMBERED_DELIVERIES = 1000;
const TOKEN_HEADER = 'x-webhook-token';

/** §6: the payload is the body of GET /v1/jobs/:id of a finished job. */
function isFinishedJob(body: unknown): body is IDataObject & { id: string; status: string } {
	if (!body || typeof body !== 'object' || Array.isArray(body)) return false;
	const { id, status } = body as IDataObject;
	return typeof id === 'string' && id.trim() !== '' && typeof status === 'string' && EVENTS.includes(status);
}

/** Compares hashes, so the comparison takes the same time whatever the length or content sent. */
function tokenMatches(expected: string, given: unknown): boolean {
	if (typeof given !== 'string') return false;
	const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();
	return timingSafeEqual(digest(expected), digest(given));
}

function first(value: unknown): unknown {
	return Array.isArray(value) ? value[0] : value;
}

/** A multi-options value; an expression may give a comma-separated string instead of a list. */
function listOf(value: unknown): string[] {
	if (Array.isArray(value)) return value.map(String);
	return typeof value === 'string' && value.trim() !== '' ? value.split(',').map((entry) => entry.trim()) : [];
}

export class GenerationServiceTrigger implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Generation Service Trigger',
		name: 'generationServiceTrigger',
		icon: { light: 'file:../../icons/trigger.svg', dark: 'file:../../icons/trigger.dark.svg' },
		group: ['trigger'],
		version: 1,
		subtitle: '={{ "Jobs " + ($parameter["events"].length ? $parameter["events"].join(" or ") : "completed or failed") }}',
		description: 'Starts the workflow when a Generation Service video or music job is completed or failed',
		defaults: { name: 'Generation Service Trigger' },
		inputs: [],
		outputs: [NodeConnectionTypes.Main],
		webhooks: [
			{
				name: 'default',
				httpMethod: 'POST',
				responseMode: 'onReceived',
				// Without it n8n answers an accepted delivery with the literal text "firstEntryJson".
				responseData: 'noData',
				path: 'webhook',
			},
		],
		triggerPanel: {
			header: 'Receives the result of a video or music job when it is completed or failed',
			executionsHelp: {
				inactive:
					'Copy the Test URL above into the Webhook URL field of a Generation Service Video or Music node, click "Listen for test event", then run that node. The job\'s result arrives here when it is done.',
				active:
					'The workflow runs each time a job whose Webhook URL is this node\'s Production URL is completed or failed. Past runs are in the executions list.',
			},
			activationHint:
				'Once the workflow is built, activate (publish) it and use the Production URL in the Video and Music nodes.',
		},
		properties: [
			{
				displayName:
					'Copy this node\'s Production URL (under Webhook URLs above) into the Webhook URL field (Additional Fields) of a Generation Service Video or Music node. When the job finishes, the service sends its result here and this workflow starts. If you set a Token below, add it to that URL as <code>?token=&lt;your token&gt;</code> or send it in the <code>X-Webhook-Token</code> header.',
				name: 'webhookUrlNotice',
				type: 'notice',
				default: '',
			},
			{
				displayName: 'Events',
				name: 'events',
				type: 'multiOptions',
				required: true,
				default: ['completed', 'failed'],
				description: 'Which job results start the workflow. Others are answered and ignored.',
				options: [
					{ name: 'Completed', value: 'completed', description: 'The job finished and its output is at its URL' },
					{ name: 'Failed', value: 'failed', description: 'The job failed and was not charged' },
				],
			},
			{
				displayName: 'Modalities',
				name: 'modalities',
				type: 'multiOptions',
				default: [],
				description: 'Only jobs of these modalities start the workflow',
				hint: 'Leave empty for jobs of every modality',
				options: MODALITY_OPTIONS,
			},
			{
				displayName: 'Options',
				name: 'options',
				type: 'collection',
				placeholder: 'Add Option',
				default: {},
				options: [
					{
						displayName: 'Token',
						name: 'token',
						type: 'string',
						typeOptions: { password: true },
						default: '',
						description:
							'A secret that every delivery must carry, as ?token=… on the webhook URL or in the X-Webhook-Token header. Others are refused with 401.',
					},
				],
			},
		],
	};

	// Nothing is registered at the service: the URL travels in each job's webhook_url (§4.2, §4.3).
	webhookMethods = {
		default: {
			async checkExists(): Promise<boolean> {
				return true;
			},
			async create(): Promise<boolean> {
				return true;
			},
			async delete(): Promise<boolean> {
				return true;
			},
		},
	};

	async webhook(this: IWebhookFunctions): Promise<IWebhookResponseData> {
		const request = this.getRequestObject();
		const response = this.getResponseObject();
		const options = this.getNodeParameter('options', {}) as IDataObject;
		const token = typeof options.token === 'string' ? options.token : '';

		if (token !== '') {
			const given = first(request.query?.token) ?? first(request.headers?.[TOKEN_HEADER]);
			if (!tokenMatches(token, given)) {
				response.status(401).json({ message: 'Unauthorized: the webhook token is missing or wrong' });
				return { noWebhookResponse: true };
			}
		}

		const job = request.body as unknown;
		if (!isFinishedJob(job)) {
			response.status(400).json({
				message: 'Bad request: the body must be a finished job, a JSON object with an "id" and a "status" of completed or failed',
			});
			return { noWebhookResponse: true };
		}

		const events = listOf(this.getNodeParameter('events', []));
		const modalities = listOf(this.getNodeParameter('modalities', []));
		if (events.length > 0 && !events.includes(job.status)) {
			return { webhookResponse: { message: `Received; ${job.status} jobs are not selected in Events` } };
		}
		const modality = typeof job.modality === 'string' ? job.modality : '';
		if (modalities.length > 0 && !modalities.includes(modality)) {
			return { webhookResponse: { message: `Received; ${modality || 'this'} modality is not selected in Modalities` } };
		}

		// A bounded list in the workflow's static data, which n8n saves after each delivery.
		const staticData = this.getWorkflowStaticData('node');
		const delivered = Array.isArray(staticData.deliveries) ? (staticData.deliveries as string[]) : [];
		const key = `${job.id}:${job.status}`;
		if (delivered.includes(key)) {
			return { webhookResponse: { message: 'Received; this job result was already delivered' } };
		}
		staticData.deliveries = [...delivered, key].slice(-REMEMBERED_DELIVERIES);

		return { workflowData: [this.helpers.returnJsonArray(job)] };
	}
}

// The Azure Blob provider against Azurite on loopback (Shared Key and SAS signatures checked), through the contract
// every storage provider keeps.
import {
  AccountSASPermissions,
  AccountSASResourceTypes,
  AccountSASServices,
  generateAccountSASQueryParameters,
  StorageSharedKeyCredential,
} from '@azure/storage-blob';
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { startAzurite } from './helpers/azurite-server.ts';
import { storageContract, type ContractSubject } from './helpers/storage-contract.ts';

const azurite = await startAzurite(t);
const fill = {
  createBucket: async (name: string) => void (await azurite.client.createContainer(name)),
  put: async (container: string, key: string, bytes: Buffer) =>
    void (await azurite.client.getContainerClient(container).getBlockBlobClient(key).uploadData(bytes)),
};
const key: ContractSubject = {
  provider: 'azure',
  bucket: 'with-key',
  credentials: { accountName: azurite.accountName, accountKey: azurite.accountKey, endpoint: azurite.endpoint },
  wrongCredentials: {
    accountName: azurite.accountName,
    accountKey: randomBytes(64).toString('base64'),
    endpoint: azurite.endpoint,
  },
  wrongCredentialsError:
    /^Azure Blob at 127\.0\.0\.1:\d+ refused these credentials to (list the containers|list container [a-z-]+) \(HTTP 403\)$/,
  atEndpoint: (endpoint) => ({ accountName: azurite.accountName, accountKey: azurite.accountKey, endpoint }),
  identity: azurite.accountName,
  secrets: [azurite.accountKey],
  ...fill,
};

await t.test('with an account key (Shared Key)', (t) => storageContract(t, key));

await t.test('with an account SAS', async (t) => {
  const sas = generateAccountSASQueryParameters(
    {
      expiresOn: new Date(Date.now() + 3600_000),
      permissions: AccountSASPermissions.parse('rl'),
      resourceTypes: AccountSASResourceTypes.parse('sco').toString(),
      services: AccountSASServices.parse('b').toString(),
    },
    new StorageSharedKeyCredential(azurite.accountName, azurite.accountKey),
  ).toString();
  const signature = new URLSearchParams(sas).get('sig')!;
  const forged = new URLSearchParams(sas);
  forged.set('sig', randomBytes(32).toString('base64'));
  await storageContract(t, {
    ...key,
    bucket: 'with-sas',
    credentials: { accountName: azurite.accountName, sasToken: `?${sas}`, endpoint: azurite.endpoint },
    wrongCredentials: { accountName: azurite.accountName, sasToken: forged.toString(), endpoint: azurite.endpoint },
    atEndpoint: (endpoint) => ({ accountName: azurite.accountName, sasToken: sas, endpoint }),
    secrets: [signature, encodeURIComponent(signature)],
  });
});

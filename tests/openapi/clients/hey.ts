// SPDX-License-Identifier: ISC
// A script on @hey-api/openapi-ts's SDK (gen/hey/): it signs each call with the
// X-Auth-User and X-Auth-Key pair (the document's one security requirement of two
// schemes: the SDK's auth callback is asked for each and sends both), reads the dashboard,
// makes itself a named API token, calls with that token as a Bearer on a second client,
// reads the token back at its Location, deletes it, and is refused with it afterwards.
import type { Auth } from "../gen/hey/client";
import { createClient, createConfig } from "../gen/hey/client";
import { client } from "../gen/hey/client.gen";
import {
  createUserToken,
  deleteUserToken,
  getDashboard,
  getUserToken,
  listUserTokens,
} from "../gen/hey/sdk.gen";

export async function run(base: string, user: string, password: string): Promise<number> {
  client.setConfig({
    baseUrl: base,
    auth: (a: Auth) =>
      a.name === "X-Auth-User" ? user : a.name === "X-Auth-Key" ? password : undefined,
  });

  const dash = await getDashboard();
  if (!dash.data) throw new Error(`dashboard: ${dash.response.status}`);
  console.log(`dashboard at ${dash.data.dashboard.time}: ${dash.data.dashboard.ndisks} disks`);

  const made = await createUserToken({
    path: { name: user },
    body: { name: "hey-api-script", expires_days: 1 },
  });
  if (!made.data) throw new Error(`token: ${made.response.status} ${JSON.stringify(made.error)}`);
  const token = made.data.token;
  const where = made.response.headers.get("location");
  if (where !== token.href) throw new Error(`token: Location ${where}, href ${token.href}`);

  const bearer = createClient(createConfig({ baseUrl: base, auth: () => token.secret }));
  const mine = await listUserTokens({ client: bearer, path: { name: user } });
  if (!mine.data?.tokens.some((t) => t.id === token.id))
    throw new Error(`tokens with the Bearer: ${mine.response.status}`);
  const back = await getUserToken({ path: { name: user, id: token.id } });
  if (back.data?.token.ctime !== token.ctime) throw new Error(`token read back: ${back.response.status}`);

  const gone = await deleteUserToken({ path: { name: user, id: token.id } });
  if (gone.response.status !== 204) throw new Error(`token delete: ${gone.response.status}`);
  const refused = await getDashboard({ client: bearer });
  if (refused.response.status !== 401 || refused.error?.fault.message !== "ERR_UNAUTHORIZED")
    throw new Error(`a deleted token: ${refused.response.status}`);
  console.log(`token ${token.id} made, used as a Bearer, read at ${where}, deleted, refused`);
  return 0;
}

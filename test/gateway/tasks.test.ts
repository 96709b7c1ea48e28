import { expect } from 'chai';
import { GatewayTasks, TASKS_EXTENSION, tasksDeclared, withTasks } from '../../lib/gateway/tasks.js';
import type { Upstream } from '../../lib/gateway/upstream.js';
import type { Caller } from '../../lib/protocol/caller.js';
import { RpcError } from '../../lib/protocol/rpc-error.js';

type Json = Record<string, unknown>;

const caller = (sub: string): Caller => ({ subject: `iss|${sub}`, scopes: [], claims: { sub } });
const DECLARES = { extensions: { [TASKS_EXTENSION]: {} } };

/** A server whose tasks are numbered from 1 (so two servers' ids are the same), recording what it was asked. */
function server(name: string, capabilities: Json = DECLARES) {
  const asked: Array<{ method: string; params: Json; options: Json }> = [];
  const up = {
    name,
    capabilities,
    request: async (method: string, params: Json, options: Json) => {
      asked.push({ method, params, options });
      if (params.taskId === 'gone') throw new RpcError(-32602, 'Unknown task');
      return { taskId: params.taskId, status: 'working', from: name };
    },
  } as unknown as Upstream;
  return { up, asked };
}

const created = (taskId: string, ttlMs?: number) => ({ resultType: 'task', taskId, status: 'working', ...(ttlMs === undefined ? {} : { ttlMs }) });

describe('gateway/tasks: the tasks extension routed to the server that made each task', () => {
  it("gives two servers' tasks of one id two ids, and routes each tasks request to its own server under its own id", async () => {
    const tasks = new GatewayTasks();
    const a = server('a');
    const b = server('b/c');
    const fromA = tasks.created(a.up, undefined, created('task-1')) as Json;
    const fromB = tasks.created(b.up, undefined, created('task-1')) as Json;
    expect(fromA.taskId).to.equal('a:task-1');
    expect(fromB.taskId, "a server's name is encoded").to.equal('b%2Fc:task-1');
    expect(fromA).to.deep.include({ resultType: 'task', status: 'working' });
    for (const method of ['tasks/get', 'tasks/update', 'tasks/cancel']) {
      expect(await tasks.request(method, { taskId: 'b%2Fc:task-1', inputResponses: { x: {} } }, undefined, DECLARES)).to.deep.equal({
        taskId: 'b%2Fc:task-1',
        status: 'working',
        from: 'b/c',
      });
      expect(b.asked.at(-1)).to.deep.include({ method, params: { taskId: 'task-1', inputResponses: { x: {} } } });
      expect(b.asked.at(-1)!.options.capabilities, 'the server is told the request declares the extension').to.deep.equal(DECLARES);
    }
    expect(((await tasks.request('tasks/get', { taskId: 'a:task-1' }, undefined, DECLARES)) as Json).from).to.equal('a');
    expect(a.asked).to.have.length(1);
  });

  it("passes other results on as they are, and a server's error as it is", async () => {
    const tasks = new GatewayTasks();
    const a = server('a');
    const plain = { content: [], resultType: 'complete', taskId: 'not a task' };
    expect(tasks.created(a.up, undefined, plain)).to.equal(plain);
    tasks.created(a.up, undefined, created('gone'));
    const err = await tasks.request('tasks/get', { taskId: 'a:gone' }, undefined, DECLARES).catch((e: RpcError) => e);
    expect(err).to.be.instanceOf(RpcError).with.property('code', -32602);
  });

  it('knows a task only to the caller that made it, only while it lives, and only to a request that declares the extension', async () => {
    const tasks = new GatewayTasks('r1.');
    const a = server('a');
    const id = (tasks.created(a.up, caller('alice'), created('t', 1)) as Json).taskId as string;
    expect(id, "the replica's prefix").to.equal('r1.a:t');
    const kept = (tasks.created(a.up, caller('alice'), created('u')) as Json).taskId as string;
    const refused = async (taskId: string, who: Caller | undefined, capabilities: Json = DECLARES) =>
      tasks.request('tasks/get', { taskId }, who, capabilities).then(
        () => undefined,
        (e: RpcError) => [e.code, e.message, e.data],
      );
    expect(await refused(kept, caller('bob'))).to.deep.equal([-32602, `Unknown task: "${kept}"`, undefined]);
    expect(await refused(kept, undefined), 'nor to no one').to.have.property('0', -32602);
    expect(await refused('r1.a:none', caller('alice'))).to.have.property('0', -32602);
    expect(await refused(kept, caller('alice'), {})).to.deep.equal([
      -32021,
      `tasks/get needs the ${TASKS_EXTENSION} extension, which the request did not declare`,
      { requiredCapabilities: DECLARES },
    ]);
    expect(await refused(kept, caller('alice'))).to.equal(undefined);
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(await refused(id, caller('alice')), 'past its ttlMs').to.have.property('0', -32602);
    expect(a.asked.map((x) => x.params.taskId)).to.deep.equal(['u']);
  });

  it('declares the extension to a server only for a request that declared it, and advertises it when a server offers it', () => {
    expect(tasksDeclared(DECLARES)).to.deep.equal(DECLARES);
    expect(tasksDeclared({ extensions: { other: {} } })).to.equal(undefined);
    expect(tasksDeclared(undefined)).to.equal(undefined);
    const plain = server('p', { tools: {} }).up;
    const offering = server('t').up;
    expect(withTasks({ tools: {} }, [plain])).to.deep.equal({ tools: {} });
    expect(withTasks({ tools: {} }, [plain, offering])).to.deep.equal({ tools: {}, ...DECLARES });
  });
});

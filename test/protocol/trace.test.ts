import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { expect } from 'chai';
import { loadTraceApi, startRequestSpan, traceApi, withActiveTrace } from '../../lib/protocol/trace.js';

const PARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

describe('protocol/trace: W3C trace context in _meta', () => {
  it('loads @opentelemetry/api once, and without a registered SDK makes no span and changes no params', async () => {
    const api = await loadTraceApi();
    expect(api).to.not.equal(undefined);
    expect(await loadTraceApi()).to.equal(api);
    expect(traceApi()).to.equal(api);
    const params = { name: 'echo', _meta: { traceparent: PARENT } };
    expect(startRequestSpan('tools/call', params, 'server', {})).to.equal(undefined);
    expect(withActiveTrace(params)).to.equal(params);
    expect(withActiveTrace('not params')).to.equal('not params');
  });

  describe('with an SDK registered', () => {
    const exporter = new InMemorySpanExporter();
    before(async () => {
      const api = (await loadTraceApi())!;
      api.trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
      api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
      api.propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    });
    after(() => {
      const api = traceApi()!;
      api.trace.disable();
      api.context.disable();
      api.propagation.disable();
    });
    beforeEach(() => exporter.reset());

    it("begins a child of _meta's traceparent, named by method and tool, with no argument as an attribute", () => {
      const params = { name: 'echo', arguments: { password: 'hunter2' }, _meta: { traceparent: PARENT, progressToken: 7 } };
      const span = startRequestSpan('tools/call', params, 'server', { 'mcp.session.id': 's1', 'not.given': undefined })!;
      // The next hop gets this span's context; the caller's other _meta members stay.
      const meta = span.params!._meta as Record<string, unknown>;
      expect(meta.progressToken).to.equal(7);
      expect(meta.traceparent).to.match(/^00-0af7651916cd43dd8448eb211c80319c-[0-9a-f]{16}-01$/);
      expect(meta.traceparent).to.not.equal(PARENT);
      expect(params._meta.traceparent, 'the given params are not changed').to.equal(PARENT);
      span.end({ code: -32602 });
      const [done] = exporter.getFinishedSpans();
      expect(done!.name).to.equal('tools/call echo');
      expect(done!.parentSpanContext?.spanId).to.equal('b7ad6b7169203331');
      expect(done!.attributes).to.deep.equal({
        'mcp.method.name': 'tools/call',
        'gen_ai.tool.name': 'echo',
        'gen_ai.operation.name': 'execute_tool',
        'mcp.session.id': 's1',
        'rpc.jsonrpc.error_code': -32602,
        'error.type': '-32602',
      });
      expect(JSON.stringify(done!.attributes)).to.not.include('hunter2');
      expect(done!.status.code).to.equal(2);
    });

    it("puts the active span's context in a request's _meta, and keeps a traceparent the request has", () => {
      const api = traceApi()!;
      const tracer = api.trace.getTracer('host');
      tracer.startActiveSpan('host work', (active) => {
        const out = withActiveTrace({ name: 'x' }) as { _meta: Record<string, string> };
        expect(out._meta.traceparent).to.equal(`00-${active.spanContext().traceId}-${active.spanContext().spanId}-01`);
        const own = { _meta: { traceparent: PARENT } };
        expect(withActiveTrace(own)).to.equal(own);
        active.end();
      });
      // With no span active, nothing is added.
      const bare = { name: 'y' };
      expect(withActiveTrace(bare)).to.equal(bare);
    });

    it('names a prompt span by its prompt, and a span that ended well has no error', () => {
      startRequestSpan('prompts/get', { name: 'greet' }, 'client', {})!.end();
      const [done] = exporter.getFinishedSpans();
      expect(done!.name).to.equal('prompts/get greet');
      expect(done!.attributes['gen_ai.prompt.name']).to.equal('greet');
      expect(done!.attributes['error.type']).to.equal(undefined);
      expect(done!.status.code).to.equal(0);
    });
  });
});

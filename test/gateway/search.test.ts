// Tool search's parts: the words of a name or description, the BM25 ranking, and a search's arguments.
import { expect } from 'chai';
import { searchArguments, searchResult, ToolIndex, words } from '../../lib/gateway/search.js';

const tool = (name: string, description?: string) => ({
  name,
  ...(description === undefined ? {} : { description }),
  inputSchema: { type: 'object' },
});

describe('tool search', () => {
  it('splits names at _, -, ., / and case changes, lowercased, letters of any script kept', () => {
    expect(words('gh__delete_branch')).to.deep.equal(['gh', 'delete', 'branch']);
    expect(words('listPullRequests')).to.deep.equal(['list', 'pull', 'requests']);
    expect(words('HTTPServer.start-v2/now')).to.deep.equal(['http', 'server', 'start', 'v2', 'now']);
    expect(words('naïveÜberSchrift — größe')).to.deep.equal(['naïve', 'über', 'schrift', 'größe']);
    expect(words('  ')).to.deep.equal([]);
  });

  it('ranks by BM25 over names (weighted) and descriptions; rare words count more; ties by name; nothing for no match', () => {
    const index = new ToolIndex([
      tool('files__read_file', 'Read a file from disk.'),
      tool('files__write_file', 'Write a file to disk.'),
      tool('gh__delete_branch', 'Delete a branch of a repository.'),
      tool('gh__create_branch', 'Create a branch of a repository.'),
      tool('gh__get_repository', 'Get a repository, with its branches.'),
      tool('notes__search', 'Find notes by words; a branch of notes is a folder.'),
    ]);
    const all = (_name: string): boolean => true;
    const names = (query: string, limit = 10, visible: (name: string) => boolean = all) => index.search(query, limit, visible).map((t) => t.name);
    expect(names('delete branch')[0]).to.equal('gh__delete_branch');
    expect(names('delete branch')).to.include('gh__create_branch');
    expect(names('read file')[0]).to.equal('files__read_file');
    expect(names('write')).to.deep.equal(['files__write_file']);
    // A word in the name counts more than the same word in a description.
    expect(names('search')[0]).to.equal('notes__search');
    expect(names('branch', 2)).to.have.length(2);
    expect(names('branch', 10, (name) => !name.startsWith('gh__'))).to.deep.equal(['notes__search']);
    expect(names('kubernetes')).to.deep.equal([]);
    // The same score: by name.
    const twins = new ToolIndex([tool('b_copy', 'copy'), tool('a_copy', 'copy')]);
    expect(twins.search('copy', 10, all).map((t) => t.name)).to.deep.equal(['a_copy', 'b_copy']);
    expect(index.search('read', 1, all)[0]).to.deep.equal({
      name: 'files__read_file',
      description: 'Read a file from disk.',
      inputSchema: { type: 'object' },
    });
    expect(index.size).to.equal(6);
  });

  it('checks a search’s arguments (a query; a limit from 1 to 50, 10 by default), and answers structured content and the same as text', () => {
    expect(searchArguments({ query: 'x' })).to.deep.equal({ query: 'x', limit: 10 });
    expect(searchArguments({ query: 'x', limit: 50 })).to.deep.equal({ query: 'x', limit: 50 });
    expect(searchArguments({})).to.match(/needs a query/);
    expect(searchArguments({ query: '  ' })).to.match(/needs a query/);
    for (const limit of [0, 51, 2.5, '3'])
      expect(searchArguments({ query: 'x', limit }), String(limit)).to.match(/limit is a whole number from 1 to 50/);
    const result = searchResult([{ name: 'a', inputSchema: {} }]) as { content: Array<{ text: string }>; structuredContent: unknown };
    expect(result.structuredContent).to.deep.equal({ tools: [{ name: 'a', inputSchema: {} }] });
    expect(JSON.parse(result.content[0]!.text)).to.deep.equal(result.structuredContent);
  });
});

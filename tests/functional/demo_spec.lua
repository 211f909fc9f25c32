-- The demo of the README's quick start (scripts/demo, `make demo`): it runs
-- to the end and every step shows what it claims to show.
local H = require "spec_helper"
package.path = H.repo .. "/tests/functional/?.lua;" .. package.path
local F = require "support"

describe("scripts/demo", function()
  it("runs two agents through messages, tasks, locks, state, hooks, receipts and a shutdown request", function()
    local dir = F.tmpdir()
    local ok = os.execute("cd " .. F.sh(H.repo) .. " && TMPDIR=" .. F.sh(dir) .. " sh scripts/demo >"
      .. F.sh(dir .. "/out") .. " 2>&1")
    local out = H.read(dir .. "/out")
    assert(ok, "demo failed:\n" .. out)
    for _, want in ipairs({
      "--- what bob saw:\n",
      "title: Kickoff\n",
      "title: Re: Kickoff\n",
      "agent-chat: TASK_DEPENDENCY_NOT_READY: task grammar depends on unfinished tasks: tokenizer\n",
      "claimed task tokenizer [in_progress]\n",
      "agent-chat: PATH_LOCK_CONFLICT: lock request overlaps an active lock\n",
      "done task tokenizer [done]\n",
      "claimed task grammar [in_progress]\n",
      "# State: demo\n",
      "- `[#0007]` **hand-written lexer** (by `alice`",
      "**Task tokenizer completed: Write the tokenizer** (verified by `bob`",
      "[agent-chat] alice has unread peer messages: #demo (4). Run /agent-chat to read/reply.\n",
      "#10 alice  -> all    lease.claimed grammar\n",
      "posted #11 as 0011-script-digest.md\n",
      "posted #12 -> demo/0012-alice-review-the-grammar.md\n",
      "bob    delivered  -     -\n",
      "acked #12 in 'demo' as bob\n",
      "--- alice's post returned as soon as bob acked\n",
      "status: approved\ntitle: shutdown_response: approved\ntype: shutdown_response\n",
      "Tokenizer merged, nothing in flight.\n",
      "alice   idle       idle",
      "bob     shutdown   -",
      -- the commands it prints are the ones it runs (issue 13, item 8): the
      -- background ones with every flag and their redirection
      "$ agent-chat wait demo --as bob --timeout 30 > bob.out &\n",
      "$ agent-chat post demo --from alice --to bob --title 'Review the grammar?' --body 'It parses the test "
        .. "suite; is the precedence table right?' --wait-for acked --timeout 30 > alice.out &\n",
      "$ agent-chat request demo --from alice --to bob --type shutdown_request --body 'Wrapping up.' --timeout 30 "
        .. "> request.out &\n",
      "$ agent-chat post demo --from bob --to alice --title 'Re: Kickoff' --reply 1 --status answer --body "
        .. "'Taking the tokenizer.\nI will post when the tests pass.'\n",
      -- the hook counts audit records unless told to count peer messages
      "$ AGENT_CHAT_NAME=alice AGENT_CHAT_HOOK_KINDS=message agent-chat hook prompt\n--- (nothing",
    }) do
      assert(out:find(want, 1, true), "demo output lacks " .. F.show(want) .. ":\n" .. out)
    end
    -- the temporary root is removed
    local p = io.popen("ls -A " .. F.sh(dir))
    local left = p:read("a")
    p:close()
    assert.are.equal("out\n", left)
  end)
end)

-- agentchat.commands.tasks: placeholder until its issue lands.
local M = {}

function M.register(_)
end

return M

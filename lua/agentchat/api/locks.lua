-- agentchat.api.locks: the locks methods of agentchat.Channel (placeholder until
-- its issue lands). install(Channel, M) adds methods to the channel class.
local A = {}

function A.install(_, _)
end

return A

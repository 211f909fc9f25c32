-- agentchat.storechoice: where a root's store is when something names one
-- (docs/etcd.md "Choosing the store"): the slow part of
-- agentchat.resolve_store, loaded only when --store, $AGENT_CHAT_STORE or a
-- config file is there (most commands have none of them).
--
--   storechoice.resolve(root, spec, present)
--     spec     the URL from --store or $AGENT_CHAT_STORE, or nil
--     present  a config file may name it (the root's or the user's)
--   Returns the etcd URL and the options of store.open (credentials and
--   TLS files from the etcd.* settings), false for the root folder, or nil,
--   message, code.
local errors = require "agentchat.errors"
local store = require "agentchat.store"
local sys = require "agentchat.sys"

local M = {}

-- A broken config file stops the store lookup only when it may say where
-- the store is (a top-level `store:` line): a command that needs nothing
-- else from it keeps working, as it did before stores could be chosen.
local function broken_store_file(cfg)
  for _, scope in ipairs({ "root", "user" }) do
    local f = cfg.files[scope]
    if f and f.status == "invalid" then
      local text = sys.read_file(f.path, 1024 * 1024 + 1) or ""
      if ("\n" .. text):find("\nstore[ \t]*:") then
        return f
      end
    end
  end
end

function M.resolve(root, spec, present)
  local cfg
  if present then
    cfg = require("agentchat.config").load{ root = root, lenient = true }
  else
    -- no file to read: the environment alone (what config.load would say)
    local function env(name)
      local v = os.getenv(name)
      return v ~= "" and v or nil
    end
    cfg = { etcd_user = env("AGENT_CHAT_ETCD_USER"), etcd_password = env("AGENT_CHAT_ETCD_PASSWORD"),
            etcd_ca = env("AGENT_CHAT_ETCD_CA"), etcd_cert = env("AGENT_CHAT_ETCD_CERT"),
            etcd_key = env("AGENT_CHAT_ETCD_KEY") }
  end
  if spec == nil then
    local bad = broken_store_file(cfg)
    if bad then
      return errors.fail(bad.code, bad.error)
    end
    spec = cfg.store
  end
  if spec == nil then
    return false
  end
  if not store.is_etcd(spec) then
    return errors.fail("STORE_INVALID", "store must be an etcd://HOST:PORT[,HOST:PORT...]/PREFIX URL "
      .. "(the root folder needs no store setting)")
  end
  return spec, { username = cfg.etcd_user, password = cfg.etcd_password, ca_file = cfg.etcd_ca,
                 cert_file = cfg.etcd_cert, key_file = cfg.etcd_key }
end

return M

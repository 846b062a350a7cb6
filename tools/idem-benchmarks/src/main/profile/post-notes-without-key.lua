-- wrk script: POST /notes without an Idempotency-Key (the service without Idem).
function request()
  return wrk.format("POST", "/notes", { ["Content-Type"] = "application/json" }, '{"title":"hello"}')
end

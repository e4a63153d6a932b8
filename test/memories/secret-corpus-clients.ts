/**
 * More of the corpus: passwords given to database, registry and network clients as short
 * options, tokens a terminal wrapped across lines, unnamed SDK secrets, key files, and config
 * shapes. Each case carries `keep`: look-alike text without a secret that must stay as it is
 * (an option that prompts, a port, a digest, a path), so that a rule too wide fails too.
 */
import type { SecretCase } from "./secret-corpus.ts";
import { ALNUM, B64, DIGITS, HEX, LOWER, p, password, rand, UPPER, URLSAFE } from "./secret-rand.ts";

/** A password without symbols: what is typed unquoted on a command line. */
const plain = (n = 12) => rand(ALNUM, n);
const uuid = () => [8, 4, 4, 4, 12].map((n) => rand(HEX, n)).join("-");
const b64 = (s: string) => Buffer.from(s).toString("base64");

/** `text` cut into lines of `width` characters, as a terminal wraps a long line. */
function wrap(text: string, width: number): string {
  const lines: string[] = [];
  for (let at = 0; at < text.length; at += width) lines.push(text.slice(at, at + width));
  return lines.join("\n");
}

function puttyKey(version: 2 | 3): { secret: string; text: string; publicPart: string } {
  const algo = version === 2 ? "ssh-rsa" : "ssh-ed25519";
  const pub = [rand(B64, 64), rand(B64, 28)];
  const priv =
    version === 2 ? [rand(B64, 64), rand(B64, 64), rand(B64, 64), rand(B64, 20) + "="] : [rand(B64, 43) + "="];
  const mac = rand(HEX, version === 2 ? 40 : 64);
  const publicPart = [
    p("PuTTY-User-Key-File-", String(version), ": ", algo),
    "Encryption: none",
    `Comment: ${algo}-key-20240115`,
    `Public-Lines: ${pub.length}`,
    ...pub,
  ].join("\n");
  const text = [publicPart, `Private-Lines: ${priv.length}`, ...priv, `Private-MAC: ${mac}`].join("\n");
  return { secret: [...priv, mac].join("\n"), text, publicPart };
}

export function clientSecretCases(): SecretCase[] {
  const out: SecretCase[] = [];
  const add = (kind: string, secret: string, text: string, ...keep: string[]) => out.push({ kind, secret, text, keep });

  // Short password options of clients.
  const my1 = plain();
  add(
    "mysql -p attached",
    my1,
    `mysql -uroot -p${my1} shop`,
    "mysql -uroot -p shop",
    "mysql -u root -p -h db.internal shop < dump.sql",
  );
  const my2 = password(12);
  add(
    "mysql -p'quoted' attached",
    my2,
    `mysql -u root -p'${my2}' -e 'show databases'`,
    "mysql -u root -P 3306 -h 127.0.0.1 -e 'show databases'",
  );
  const my3 = plain(14);
  add(
    "mysqldump -p attached",
    my3,
    `mysqldump -u backup -p${my3} --all-databases > all.sql`,
    "mysqldump -u backup -p --single-transaction app > app.sql",
  );
  const my4 = password(12);
  add(
    'mysqladmin -p"quoted"',
    my4,
    `mysqladmin -uroot -p"${my4}" status`,
    "mysqladmin -uroot -p status",
    "git log -p --stat -3",
  );
  const dk = password(12);
  add(
    "docker login -p",
    dk,
    `docker login -u bob -p '${dk}' registry.example.com`,
    "docker run -p 8080:80 -u bob nginx",
    "docker login -u bob registry.example.com",
  );
  const pod = plain();
  add(
    "podman login -p",
    pod,
    `podman login quay.io -u bot -p ${pod}`,
    "podman run -p 5432:5432 -e POSTGRES_DB=app postgres:16",
  );
  const oc = plain();
  add(
    "oc login -p",
    oc,
    `oc login https://api.ocp.example.com:6443 -u admin -p ${oc}`,
    "oc login https://api.ocp.example.com:6443 -u admin",
    "oc port-forward svc/db 5432 -n data",
  );
  const az = plain(14);
  add(
    "az login -p",
    az,
    `az login -u ops@example.com -p ${az}`,
    "az login -u ops@example.com",
    "az login --use-device-code",
  );
  const azsp = p(rand(ALNUM, 3), "8Q~", rand(URLSAFE, 34));
  add(
    "az login service principal secret",
    azsp,
    `az login --service-principal -u ${uuid()} -p ${azsp} --tenant ${uuid()}`,
    `az login --service-principal -u ${uuid()} -p ~/certs/sp.pem --tenant ${uuid()}`,
  );
  const sp = plain(10);
  add(
    'sshpass -p "quoted"',
    sp,
    `sshpass -p "${sp}" ssh deploy@10.0.0.12 uptime`,
    "ssh -p 2222 deploy@10.0.0.12 uptime",
    "sshpass -e ssh deploy@10.0.0.12",
  );
  const mg = plain(10);
  add(
    "mongosh -p",
    mg,
    `mongosh -u admin -p ${mg} --authenticationDatabase admin`,
    "mongosh -u admin -p --authenticationDatabase admin",
    "mongosh --port 27017 --quiet",
  );
  const rd = plain(14);
  add("redis-cli -a", rd, `redis-cli -h cache.internal -a ${rd} ping`, "redis-cli -h cache.internal -p 6379 ping");
  const rd2 = plain();
  add("redis-cli --pass", rd2, `redis-cli --user app --pass ${rd2} info`, "redis-cli --user app --askpass info");
  const cu = rand(LOWER, 4) + rand(DIGITS, 2);
  add(
    "curl -u user:pw (short)",
    cu,
    `curl -u ci:${cu} https://jenkins.example.com/api/json`,
    "curl -u ci https://jenkins.example.com/api/json",
    "curl -sSfL -o out.json https://example.com/a.json",
  );
  const cpu = plain();
  add(
    "curl --proxy-user",
    cpu,
    `curl -x http://proxy:3128 --proxy-user ops:${cpu} https://example.com`,
    "curl -x http://proxy:3128 --proxy-user ops https://example.com",
  );
  const ps = plain();
  add(
    "psql URI",
    ps,
    `psql postgres://app:${ps}@db.internal/prod -c 'select 1'`,
    "psql postgres://app@db.internal/prod -c 'select 1'",
  );
  const pg = plain(10);
  add(
    "PGPASSWORD for pg_dump",
    pg,
    `PGPASSWORD='${pg}' pg_dump -h db -U app prod > dump.sql`,
    "pg_dump -h db -U app -W prod > dump.sql",
  );
  const ld = password(12);
  add(
    "ldapsearch -w",
    ld,
    `ldapsearch -x -H ldap://dc1 -D "cn=admin,dc=example,dc=com" -w ${ld} -b dc=example,dc=com`,
    `ldapsearch -x -H ldap://dc1 -D "cn=admin,dc=example,dc=com" -W -b dc=example,dc=com`,
  );
  const smb = plain();
  add(
    "smbclient -U user%pass",
    smb,
    `smbclient //fs01/share -U bob%${smb} -c ls`,
    "smbclient //fs01/share -U bob -c ls",
    "printf '%s%%\\n' 42",
  );
  const ht = plain();
  add("htpasswd -b", ht, `htpasswd -bc /etc/nginx/.htpasswd admin ${ht}`, "htpasswd -c /etc/nginx/.htpasswd admin");
  const os1 = plain();
  add(
    "openssl -passin pass:",
    os1,
    `openssl rsa -in key.pem -passin pass:${os1} -out plain.pem`,
    "openssl rsa -in key.pem -passin env:KEY_PASS -out plain.pem",
    "openssl rsa -in key.pem -passin file:pass.txt -out plain.pem",
  );
  const os2 = password(12);
  add(
    "openssl pkcs12 -passout 'pass:'",
    os2,
    `openssl pkcs12 -export -in c.pem -inkey k.pem -out c.p12 -passout 'pass:${os2}'`,
    "openssl pkcs12 -export -in c.pem -inkey k.pem -out c.p12 -passout stdin",
  );
  const sq = password(14);
  add("sqlcmd -P", sq, `sqlcmd -S db,1433 -U sa -P '${sq}' -Q "SELECT 1"`, `sqlcmd -S db,1433 -U sa -Q "SELECT 1"`);
  const ipmi = plain(10);
  add(
    "ipmitool -P",
    ipmi,
    `ipmitool -I lanplus -H 10.0.0.5 -U ADMIN -P ${ipmi} chassis status`,
    "ipmitool -I lanplus -H 10.0.0.5 -U ADMIN -E chassis status",
  );
  const sz = plain();
  add("7z -p attached", sz, `7z a -p${sz} -mhe=on backup.7z ./data`, "7z a -p -mhe=on backup.7z ./data");
  const zp = plain();
  add("zip -P", zp, `zip -r -P ${zp} keys.zip ./keys`, "zip -r -e keys.zip ./keys");
  const kt = plain();
  add(
    "keytool -storepass",
    kt,
    `keytool -list -keystore app.jks -storepass ${kt}`,
    "keytool -list -keystore app.jks -storepass:env STORE_PASS",
  );
  const lf = plain();
  add(
    "lftp -u user,pass",
    lf,
    `lftp -u deploy,${lf} sftp://files.example.com`,
    "lftp -u deploy sftp://files.example.com",
  );
  const sk = plain();
  add(
    "skopeo --src-creds user:pw",
    sk,
    `skopeo copy --src-creds bot:${sk} docker://a.io/x:1 docker://b.io/x:1`,
    "skopeo inspect docker://quay.io/org/img:1.2",
  );
  const rdp = password(12);
  add(
    "xfreerdp /p:",
    rdp,
    `xfreerdp /v:10.0.0.9 /u:Administrator /p:${rdp} /cert:ignore`,
    "xfreerdp /v:10.0.0.9 /u:Administrator /cert:ignore",
  );
  const snmp = plain();
  add(
    "snmpwalk -A (v3 auth pass)",
    snmp,
    `snmpwalk -v3 -l authPriv -u monitor -a SHA -A ${snmp} -x AES 10.0.0.1`,
    "snmpwalk -v2c -c public 10.0.0.1 system",
  );
  const vt = p("s.", rand(ALNUM, 24));
  add("vault login legacy token", vt, `vault login ${vt}`, "vault login -method=oidc role=dev");
  const hvs = p("hv", "s.", rand(URLSAFE, 90));
  add(
    "vault service token",
    hvs,
    `export VAULT_ADDR=https://vault:8200; echo ${hvs} | vault login -`,
    "vault status -address=https://vault:8200",
  );
  const npmu = uuid();
  add(
    "npm config set _authToken (space)",
    npmu,
    `npm config set //npm.example.com/:_authToken ${npmu}`,
    "npm config set registry https://npm.example.com/",
  );
  const rq = rand(ALNUM, 10);
  add("rabbitmqctl add_user", rq, `rabbitmqctl add_user ci ${rq}`, "rabbitmqctl list_users");

  // Tokens a terminal wrapped: neither half is long enough for its rule.
  const ghp = p("gh", "p_", rand(ALNUM, 36));
  add(
    "github token wrapped across two lines",
    ghp,
    `token ${ghp.slice(0, 22)}\n${ghp.slice(22)} (copied from the terminal)`,
    "the token starts with ghp_ and\nis 40 characters long",
    "task-runner sk-learn\ncompatible estimators",
  );
  const proj = p("sk", "-proj-", rand(URLSAFE, 120));
  add(
    "openai key wrapped at 60 columns",
    proj,
    wrap(`the new key is ${proj}`, 60),
    "install sk-learn-compatible\nestimators-for-the-pipeline-now",
  );
  const jwtHead = Buffer.from(JSON.stringify({ alg: "HS256", typ: "JWT" })).toString("base64url");
  const jwt = [
    jwtHead,
    Buffer.from(JSON.stringify({ sub: rand(DIGITS, 10) })).toString("base64url"),
    rand(URLSAFE, 43),
  ].join(".");
  add(
    "JWT wrapped in tool output",
    jwt,
    `Set-Cookie: sid=${jwt.slice(0, 30)}\n${jwt.slice(30)}; HttpOnly`,
    "Set-Cookie: theme=dark; HttpOnly\nPath=/",
  );

  // Unnamed SDK secrets.
  const tw = rand(HEX, 32);
  add(
    "twilio auth token beside an account sid",
    tw,
    `client = Client("${p("A", "C")}${rand(HEX, 32)}", "${tw}")`,
    `assert.equal(md5(buf), "${rand(HEX, 32)}")`,
    `${rand(HEX, 32)}  dist/relay.tar.gz`,
    `uuid.UUID("${rand(HEX, 32)}")`,
  );
  const tw2 = rand(HEX, 32);
  add(
    "hex secret as a constructor argument",
    tw2,
    `const api = new Mailer(accountId, '${tw2}');`,
    `expect(hash).toBe('${rand(HEX, 32)}');`,
    `const ids = ['${rand(HEX, 32)}', '${rand(HEX, 32)}'];`,
  );
  const mailgun = p("key", "-", rand(HEX, 32));
  add(
    "mailgun api key",
    mailgun,
    `curl -s --user 'api:${mailgun}' https://api.mailgun.net/v3/mg.example.com/messages`,
    "a key-value store with monkey-patched keys",
  );

  // Key files.
  const ppk2 = puttyKey(2);
  add("PuTTY v2 private key", ppk2.secret, ppk2.text, ppk2.publicPart);
  const ppk3 = puttyKey(3);
  add("PuTTY v3 private key", ppk3.secret, `cat ~/.ssh/deploy.ppk\n${ppk3.text}`, ppk3.publicPart);

  // Dot-named keys: files in a Kubernetes secret.
  const dcfgPw = password(12);
  const dcfg = b64(
    JSON.stringify({
      auths: { "registry.example.com": { username: "bot", password: dcfgPw, auth: b64(`bot:${dcfgPw}`) } },
    }),
  );
  add(
    ".dockerconfigjson in a Secret",
    dcfg,
    `apiVersion: v1\nkind: Secret\ntype: kubernetes.io/dockerconfigjson\ndata:\n  .dockerconfigjson: ${dcfg}`,
    "data:\n  .nvmrc: v20.11.1\n  .editorconfig: root=true",
  );
  const dcfg2 = b64(JSON.stringify({ "https://index.docker.io/v1/": { auth: b64(`bot:${plain()}`) } }));
  add(".dockercfg in JSON", dcfg2, `{"data": {".dockercfg": "${dcfg2}"}}`, `{".prettierrc": "./prettier.config.js"}`);

  // Config and environment shapes.
  const aws = rand(B64, 40);
  add(
    "AWS secret quoted in an env file",
    aws,
    `AWS_ACCESS_KEY_ID=${p("AK", "IA", rand(UPPER + DIGITS, 16))}\nAWS_SECRET_ACCESS_KEY="${aws}"`,
    "AWS_DEFAULT_REGION=eu-west-1\nAWS_PROFILE=dev",
  );
  const k8s = password(14);
  add(
    "kubectl --from-literal=password",
    k8s,
    `kubectl create secret generic db --from-literal=username=app --from-literal=password=${k8s}`,
    "kubectl get secret db -o jsonpath='{.data.password}' | base64 -d >/dev/null",
  );
  const npmrc = b64(`ci:${plain()}`);
  add(
    ".npmrc _auth",
    npmrc,
    `//npm.example.com/:_auth=${npmrc}\nalways-auth=true`,
    "always-auth=true\nregistry=https://npm.example.com/",
  );
  const pypi = plain(16);
  add(
    ".pypirc password",
    pypi,
    `[internal]\nrepository = https://pypi.example.com\nusername = deploy\npassword = ${pypi}`,
    "[pypi]\nusername = __token__",
  );
  const jdbc = plain();
  add(
    "JDBC URL password=",
    jdbc,
    `jdbc:postgresql://db:5432/app?user=app&password=${jdbc}&ssl=true`,
    "jdbc:postgresql://db:5432/app?user=app&ssl=true",
  );
  const mssql = password(14);
  add(
    "JDBC SQL Server password=",
    mssql,
    `jdbc:sqlserver://db:1433;databaseName=app;user=sa;password=${mssql};encrypt=true`,
    "jdbc:sqlserver://db:1433;databaseName=app;integratedSecurity=true",
  );
  const gl = rand(URLSAFE, 20);
  add(
    "git clone with a token in the URL",
    gl,
    `git clone https://oauth2:${gl}@gitlab.example.com/g/r.git`,
    "git clone git@gitlab.example.com:g/r.git",
  );
  const wg = plain();
  add(
    "wget --password=",
    wg,
    `wget --user=ci --password=${wg} https://files.example.com/a.tgz`,
    "wget --ask-password --user=ci https://files.example.com/a.tgz",
  );
  const rs = plain();
  add(
    "RSYNC_PASSWORD",
    rs,
    `RSYNC_PASSWORD=${rs} rsync -av ./dist/ backup@host::releases/`,
    "rsync -av --password-file=/etc/rsync.pass ./dist/ backup@host::releases/",
  );
  const gho = p("gh", "o_", rand(ALNUM, 36));
  add(
    "gh auth login --with-token",
    gho,
    `gh auth login --with-token <<< ${gho}`,
    "gh auth login --with-token < ~/.config/gh-token.txt",
  );
  const helm = plain();
  add(
    "helm repo add --password",
    helm,
    `helm repo add internal https://charts.example.com --username ci --password ${helm}`,
    "echo $HELM_PW | helm registry login charts.example.com -u ci --password-stdin",
  );
  const pgpw = password(12);
  add(
    "docker run -e POSTGRES_PASSWORD",
    pgpw,
    `docker run -d -e POSTGRES_PASSWORD=${pgpw} -p 5432:5432 postgres:16`,
    "docker run -d -e POSTGRES_PASSWORD_FILE=/run/secrets/pg -p 5432:5432 postgres:16",
  );
  const basic = b64(`admin:${plain()}`);
  add("Proxy-Authorization: Basic", basic, `Proxy-Authorization: Basic ${basic}`, "Proxy-Authorization: required");
  const xoxe = p("xo", "xe.xo", "xp-1-", rand(ALNUM, 140));
  add("slack refresh token", xoxe, `rotated to ${xoxe}`, "the xoxe rotation docs");
  const stripe = p("sk", "_test_", rand(ALNUM, 99));
  add("stripe test key in prose", stripe, `use ${stripe} for the sandbox`, "sk_test keys live in the dashboard");
  return out;
}

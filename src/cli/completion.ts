/**
 * `relay completion bash|zsh|fish`: shell completion scripts generated from the command tree
 * itself, so every subcommand, flag and flag choice is offered and none can go stale.
 */
import { Argument, Command } from "@commander-js/extra-typings";

type AnyCommand = Command<unknown[], Record<string, unknown>, Record<string, unknown>>;

/** One command of the tree, by its path of subcommand names ("" for relay itself). */
interface CommandNode {
  path: string;
  subcommands: Array<{ name: string; description: string }>;
  flags: Array<{ long?: string; short?: string; description: string; takesValue: boolean; choices: string[] }>;
}

export const SHELLS = ["bash", "zsh", "fish"] as const;
type Shell = (typeof SHELLS)[number];

function visible(cmd: AnyCommand): AnyCommand[] {
  return (cmd.commands as AnyCommand[]).filter((c) => !(c as unknown as { _hidden?: boolean })._hidden);
}

export function commandNodes(root: AnyCommand): CommandNode[] {
  const nodes: CommandNode[] = [];
  const walk = (cmd: AnyCommand, path: string) => {
    nodes.push({
      path,
      subcommands: visible(cmd).map((c) => ({ name: c.name(), description: c.description() })),
      flags: [
        ...cmd.options
          .filter((o) => !o.hidden)
          .map((o) => ({
            long: o.long,
            short: o.short,
            description: o.description,
            takesValue: o.required || o.optional,
            choices: [...(o.argChoices ?? [])],
          })),
        { long: "--help", short: "-h", description: "show help", takesValue: false, choices: [] },
      ],
    });
    for (const sub of visible(cmd)) walk(sub, path ? `${path} ${sub.name()}` : sub.name());
  };
  walk(root, "");
  return nodes;
}

const quote = (s: string) => `'${s.replace(/'/g, "'\\''")}'`;
/** fish's single quotes escape with a backslash, not by closing the quote. */
const fishQuote = (s: string) => `'${s.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`;
const oneLine = (s: string) => s.replace(/\s+/g, " ").slice(0, 100);

/** The case-statement lookups both bash and zsh scripts share (POSIX `case` syntax). */
function lookupFunctions(nodes: CommandNode[]): string {
  const cases = (fn: string, rows: Array<[string, string]>) =>
    `${fn}() {\n  case "$1" in\n${rows.map(([k, v]) => `    ${quote(k)}) echo ${quote(v)} ;;\n`).join("")}  esac\n}\n`;
  const valueRows: Array<[string, string]> = [];
  for (const n of nodes) {
    for (const f of n.flags.filter((x) => x.takesValue))
      for (const name of [f.long, f.short].filter(Boolean))
        valueRows.push([`${n.path}|${name}`, f.choices.join(" ") || "<file>"]);
  }
  return [
    cases(
      "_relay_subs",
      nodes.map((n) => [n.path, n.subcommands.map((s) => s.name).join(" ")]),
    ),
    cases(
      "_relay_flags",
      nodes.map((n) => [n.path, n.flags.flatMap((f) => [f.long, f.short].filter(Boolean)).join(" ")]),
    ),
    // Prints the flag's choices, `<file>` for a free value, nothing for a switch.
    cases("_relay_value", valueRows),
  ].join("");
}

/** The word loop: the subcommand path typed so far, skipping flags and the values they take. */
const PATH_LOOP = `  cmdpath=""
  skip=0
  for ((i = FIRST; i < LAST; i++)); do
    w="\${WORDS[i]}"
    if [ "$skip" = 1 ]; then skip=0; continue; fi
    case "$w" in
      -*) [ -n "$(_relay_value "$cmdpath|$w")" ] && skip=1; continue ;;
    esac
    case " $(_relay_subs "$cmdpath") " in
      *" $w "*) cmdpath="\${cmdpath:+$cmdpath }$w" ;;
    esac
  done`;

/** What differs between the bash and zsh functions; the logic is the same. */
interface Dialect {
  header: string;
  /** Index of the first word after `relay`, the current word's index, and the words array. */
  first: string;
  current: string;
  words: string;
  /** Offers the space-separated words in $values, or file names. */
  offer: string;
  files: string;
  footer: string;
}

const BASH: Dialect = {
  header: `# relay completion for bash. Load it with: eval "$(relay completion bash)"
# or save it: relay completion bash > ~/.local/share/bash-completion/completions/relay`,
  first: "1",
  current: "COMP_CWORD",
  words: "COMP_WORDS",
  offer: 'COMPREPLY=($(compgen -W "$values" -- "$cur"))',
  files: 'COMPREPLY=($(compgen -f -- "$cur"))',
  footer: "complete -F _relay relay",
};

const ZSH: Dialect = {
  header: `#compdef relay
# relay completion for zsh. Load it with: eval "$(relay completion zsh)"
# or save it as _relay in a directory of your $fpath.`,
  first: "2",
  current: "CURRENT",
  words: "words",
  offer: "compadd -- ${=values}",
  files: "_files",
  footer: "compdef _relay relay",
};

function shellFunctionScript(d: Dialect, nodes: CommandNode[]): string {
  const loop = PATH_LOOP.replace("FIRST", d.first).replace("LAST", d.current).replace("WORDS", d.words);
  return `${d.header}
${lookupFunctions(nodes)}_relay() {
  local cur prev cmdpath skip i w values
${loop}
  cur="\${${d.words}[${d.current}]}"
  prev="\${${d.words}[${d.current}-1]}"
  values="$(_relay_value "$cmdpath|$prev")"
  if [ "$values" = "<file>" ]; then ${d.files}; return; fi
  if [ -n "$values" ]; then ${d.offer}; return; fi
  case "$cur" in -*) values="$(_relay_flags "$cmdpath")"; ${d.offer}; return ;; esac
  values="$(_relay_subs "$cmdpath")"
  if [ -n "$values" ]; then ${d.offer}; else ${d.files}; fi
}
${d.footer}
`;
}

function fishScript(nodes: CommandNode[]): string {
  const subs = nodes
    .map((n) => `    case ${fishQuote(n.path)}\n      echo ${fishQuote(n.subcommands.map((s) => s.name).join(" "))}\n`)
    .join("");
  const lines: string[] = [];
  for (const n of nodes) {
    // Paths are subcommand names: letters and dashes, safe inside double quotes.
    const at = `-n "__relay_at '${n.path}'"`;
    for (const s of n.subcommands)
      lines.push(`complete -c relay ${at} -a ${fishQuote(s.name)} -d ${fishQuote(oneLine(s.description))}`);
    for (const f of n.flags) {
      const names = [f.long ? `-l ${f.long.slice(2)}` : "", f.short ? `-s ${f.short.slice(1)}` : ""]
        .filter(Boolean)
        .join(" ");
      const value = f.takesValue ? (f.choices.length ? ` -x -a ${fishQuote(f.choices.join(" "))}` : " -r -F") : "";
      lines.push(`complete -c relay ${at} ${names}${value} -d ${fishQuote(oneLine(f.description))}`);
    }
  }
  return `# relay completion for fish. Load it with: relay completion fish | source
# or save it: relay completion fish > ~/.config/fish/completions/relay.fish
function __relay_subs
  switch "$argv[1]"
${subs}  end
end
function __relay_path
  set -l p ''
  for w in (commandline -opc)[2..-1]
    string match -q -- '-*' $w; and continue
    if contains -- $w (string split ' ' (__relay_subs $p))
      set p (string trim -- "$p $w")
    end
  end
  echo $p
end
function __relay_at
  set -l p (__relay_path)
  test "$p" = "$argv[1]"
end
complete -c relay -f
${lines.join("\n")}
`;
}

export function completionScript(shell: Shell, root: AnyCommand): string {
  const nodes = commandNodes(root);
  return shell === "fish" ? fishScript(nodes) : shellFunctionScript(shell === "bash" ? BASH : ZSH, nodes);
}

export function completionCommand() {
  return new Command("completion")
    .description("print a shell completion script for bash, zsh or fish")
    .addArgument(new Argument("<shell>", "the shell").choices(SHELLS))
    .addHelpText(
      "after",
      `
Examples:
  eval "$(relay completion bash)"         # in ~/.bashrc
  eval "$(relay completion zsh)"          # in ~/.zshrc (after compinit)
  relay completion fish | source          # in ~/.config/fish/config.fish`,
    )
    .action((shell, _opts, cmd) => {
      let root = cmd as unknown as AnyCommand;
      while (root.parent) root = root.parent as AnyCommand;
      process.stdout.write(completionScript(shell, root));
    });
}

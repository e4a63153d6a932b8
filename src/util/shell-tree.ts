/**
 * Shell commands read with the maintained bash grammar (tree-sitter-bash), turned into the
 * commands approval checks (shell-ast.ts). The walk is strict: every node it does not know, and
 * every child a construct should not have, is a ShellParseError, as is any syntax error the
 * grammar reports, so a command relay cannot read asks. Where the grammar is known to read less
 * than bash does (backticks in here-documents, substitutions it leaves in plain text), the text
 * between the nodes is checked too, so a substitution never hides in what looks like a literal.
 * What needs only a node (its children, the checks of its text) is in shell-tree-nodes.ts.
 */
import type { BashParser, SyntaxNode } from "./bash-grammar.ts";
import {
  type Assignment,
  bracketCloses,
  type Command,
  type GroupCommand,
  type Redirect,
  type Script,
  SHELL_NAME,
  ShellParseError,
  SIMPLE_BRACED,
  type SimpleCommand,
  type Word,
  WordBuilder,
} from "./shell-ast.ts";
import { decodeAnsiC, unescapeBackticks } from "./shell-quoting.ts";
import {
  addParts,
  auditLiteral,
  checkArithmetic,
  checkHeredocEnd,
  fields,
  fixedWord,
  kids,
  named,
  notAnalysed,
  type RedirectParts,
  syntaxError,
} from "./shell-tree-nodes.ts";

const MAX_DEPTH = 16;

/** Statements that only hold other statements (the keywords around them are tokens). */
const CONTAINERS = new Set(["pipeline", "list", "negated_command", "do_group", "elif_clause", "else_clause"]);

export function parseShellTree(parser: BashParser, src: string, depth = 0): Script {
  if (depth > MAX_DEPTH) throw new ShellParseError("substitutions are nested too deeply");
  const tree = parser.parse(src);
  if (!tree) throw new ShellParseError("the bash grammar read nothing");
  try {
    const root = tree.rootNode;
    if (root.hasError) throw new ShellParseError(syntaxError(root, src));
    return new TreeReader(parser, src, depth).script(kids(root));
  } finally {
    tree.delete();
  }
}

class TreeReader {
  constructor(
    private readonly parser: BashParser,
    private readonly src: string,
    private depth: number,
  ) {}

  private nested<T>(f: () => T): T {
    if (++this.depth > MAX_DEPTH) throw new ShellParseError("the command is nested too deeply");
    try {
      return f();
    } finally {
      this.depth--;
    }
  }

  /** The commands among `nodes`; the tokens between them (`;`, `&`, `|`, keywords) join them. */
  script(nodes: readonly SyntaxNode[]): Script {
    return { commands: this.statements(nodes) };
  }

  private statements(nodes: readonly SyntaxNode[]): Command[] {
    return nodes.flatMap((n) => (!n.isNamed || n.type === "comment" ? [] : this.nested(() => this.statement(n))));
  }

  private statement(n: SyntaxNode): Command[] {
    if (CONTAINERS.has(n.type)) return this.statements(kids(n));
    switch (n.type) {
      case "command":
        return this.simple(n);
      case "redirected_statement":
        return this.redirected(n);
      case "subshell":
      case "if_statement":
      case "while_statement":
        return [this.group(this.statements(kids(n)))];
      case "compound_statement":
        if (n.child(0)?.type === "((") {
          checkArithmetic(n);
          return [];
        }
        return [this.group(this.statements(kids(n)))];
      case "for_statement":
        return [this.forLoop(n)];
      case "case_statement":
        return [this.caseStatement(n)];
      case "function_definition":
        return [this.functionDefinition(n)];
      case "variable_assignment":
        return [{ type: "simple", assigns: [this.assignment(n)], words: [], redirects: [] }];
      case "variable_assignments":
        return [
          {
            type: "simple",
            assigns: named(n).map((c) =>
              c.type === "variable_assignment" ? this.assignment(c) : notAnalysed(c, " in assignments"),
            ),
            words: [],
            redirects: [],
          },
        ];
      case "declaration_command":
      case "unset_command":
        return [this.declaration(n)];
      case "test_command":
        return [{ type: "simple", assigns: [], words: this.testWords(n), redirects: [] }];
      case "c_style_for_statement":
        throw new ShellParseError("the arithmetic for (( )) is not analysed");
      default:
        return notAnalysed(n);
    }
  }

  private group(commands: Command[], words?: Word[]): GroupCommand {
    return { type: "group", body: { commands }, redirects: [], ...(words ? { words } : {}) };
  }

  private simple(n: SyntaxNode): Command[] {
    const done: Command[] = [];
    let cmd: SimpleCommand = { type: "simple", assigns: [], words: [], redirects: [] };
    const after: Command[] = [];
    let end = n.startIndex;
    for (const [c, field] of fields(n)) {
      // The grammar runs `>out` on to the next line's command; to bash a newline ends it.
      if (/(^|[^\\])\n/.test(this.src.slice(end, c.startIndex))) {
        if (cmd.words.length > 0) notAnalysed(c, " after a line break in a command");
        done.push(cmd);
        cmd = { type: "simple", assigns: [], words: [], redirects: [] };
      }
      end = c.endIndex;
      if (c.type === "variable_assignment") cmd.assigns.push(this.assignment(c));
      else if (c.type === "command_name") {
        // The grammar reads the second `!` of `! ! cmd` as a command name; bash negates twice
        // (after a redirection or an assignment, `!` is a command name to bash too).
        const name = this.word(this.only(c));
        const first = cmd.assigns.length + cmd.redirects.length === 0;
        if (!(first && name.raw === "!")) cmd.words.push(name);
      } else if (field === "argument") cmd.words.push(this.word(c));
      else if (field === "redirect")
        addParts({ redirects: cmd.redirects, words: cmd.words, commands: after }, this.redirect(c));
      else notAnalysed(c, " in a command");
    }
    return [...done, cmd, ...after];
  }

  /** The one named child of `n`, with no token beside it. */
  private only(n: SyntaxNode): SyntaxNode {
    const [child, ...more] = kids(n);
    if (!child || more.length > 0) return notAnalysed(n);
    return child;
  }

  private redirected(n: SyntaxNode): Command[] {
    let body: Command[] = [];
    const parts: RedirectParts = { redirects: [], words: [], commands: [] };
    for (const [c, field] of fields(n)) {
      if (field === "body") body = this.nested(() => this.statement(c));
      else if (field === "redirect") {
        addParts(parts, this.redirect(c));
      } else notAnalysed(c, " in a redirected command");
    }
    const [first, ...rest] = body;
    let cmd: Command;
    if (!first) cmd = { type: "simple", assigns: [], words: parts.words, redirects: parts.redirects };
    else if (first.type === "simple" && rest.length === 0)
      cmd = { ...first, words: [...first.words, ...parts.words], redirects: [...first.redirects, ...parts.redirects] };
    else if (parts.words.length > 0)
      throw new ShellParseError(
        `words after a redirection of a compound command are not analysed (at offset ${n.startIndex})`,
      );
    else cmd = { ...this.group(body), redirects: parts.redirects };
    return [cmd, ...parts.commands];
  }

  private redirect(n: SyntaxNode): RedirectParts {
    switch (n.type) {
      case "file_redirect":
        return this.fileRedirect(n);
      case "herestring_redirect":
        return {
          redirects: [{ op: "<<<", target: this.word(named(n).length === 1 ? named(n)[0]! : notAnalysed(n)) }],
          words: [],
          commands: [],
        };
      case "heredoc_redirect":
        return this.heredoc(n);
      default:
        return notAnalysed(n, " as a redirection");
    }
  }

  private fileRedirect(n: SyntaxNode): RedirectParts {
    let fd: number | undefined;
    let op: string | undefined;
    const targets: Word[] = [];
    for (const [c, field] of fields(n)) {
      if (field === "descriptor") fd = Number(c.text);
      else if (field === "destination") targets.push(this.word(c));
      else if (!c.isNamed && op === undefined) op = c.type;
      else notAnalysed(c, " in a redirection");
    }
    if (op === undefined) return notAnalysed(n);
    // `>&-` and `<&-` close a descriptor: the grammar reads the dash as part of the operator.
    if ((op === ">&-" || op === "<&-") && targets.length === 0) targets.push(fixedWord("-"));
    const [target, ...words] = targets;
    if (!target) throw new ShellParseError(`${op} needs a target (at offset ${n.startIndex})`);
    return {
      redirects: [{ op: op.replace(/-$/, ""), target, ...(fd === undefined ? {} : { fd }) }],
      words,
      commands: [],
    };
  }

  /** `<<DELIM` with its body, and what the grammar hangs on it: more redirections, `| cmd`, `&& cmd`. */
  private heredoc(n: SyntaxNode): RedirectParts {
    const parts: RedirectParts = { redirects: [], words: [], commands: [] };
    let op: string | undefined;
    let start: SyntaxNode | undefined;
    let body: SyntaxNode | undefined;
    let end: SyntaxNode | undefined;
    for (const [c, field] of fields(n)) {
      if (c.type === "heredoc_start") start = c;
      else if (c.type === "heredoc_body") body = c;
      else if (c.type === "heredoc_end") end = c;
      else if (field === "redirect") {
        addParts(parts, this.redirect(c));
      } else if (c.isNamed) parts.commands.push(...this.nested(() => this.statement(c)));
      else if (op === undefined) op = c.type;
      else if (!["|", "|&", "&&", "||", ";", "&"].includes(c.type)) notAnalysed(c, " after a here-document");
    }
    if (!op || !start) return notAnalysed(n);
    const quoted = /['"\\]/.test(start.text);
    const delimiter = start.text.replace(/['"\\]/g, "");
    checkHeredocEnd(op, delimiter, body, end);
    const redirect: Redirect = {
      op,
      target: fixedWord(delimiter, start.text),
      heredocScripts: quoted || !body ? [] : this.heredocScripts(body),
    };
    return { ...parts, redirects: [redirect, ...parts.redirects] };
  }

  /** The substitutions an unquoted here-document's body runs. */
  private heredocScripts(body: SyntaxNode): Script[] {
    const b = new WordBuilder();
    this.auditGaps(body, "a here-document");
    for (const c of named(body)) {
      if (c.type === "heredoc_content") auditLiteral(c.text, c.startIndex, "a here-document");
      else this.piece(c, b, true, c.endIndex);
    }
    return b.scripts;
  }

  private assignment(n: SyntaxNode): Assignment {
    const name = n.childForFieldName("name");
    if (name?.type !== "variable_name") return notAnalysed(name ?? n, " as a variable name (arrays are not analysed)");
    // The grammar takes `--x=y` for an assignment; bash runs it as a command.
    if (!SHELL_NAME.test(name.text))
      throw new ShellParseError(`${name.text} is not a variable name bash assigns (at offset ${n.startIndex})`);
    return { name: name.text, word: this.assignmentWord(n) };
  }

  /** `NAME=VALUE` as one word, as bash's argument to `export` or a command's prefix. */
  private assignmentWord(n: SyntaxNode): Word {
    const b = new WordBuilder();
    for (const [c, field] of fields(n)) {
      if (field === "name") b.lit(c.text);
      else if (field === "value") {
        if (c.type === "array") notAnalysed(c, " (arrays)");
        this.piece(c, b, false, c.endIndex);
      } else if (!c.isNamed && (c.type === "=" || c.type === "+=")) b.lit(c.type);
      else notAnalysed(c, " in an assignment");
    }
    return b.finish(n.text);
  }

  private declaration(n: SyntaxNode): SimpleCommand {
    const words: Word[] = [];
    for (const c of kids(n)) {
      if (!c.isNamed) words.length === 0 ? words.push(fixedWord(c.type)) : notAnalysed(c, " in a declaration");
      else words.push(c.type === "variable_assignment" ? this.assignmentWord(c) : this.word(c));
    }
    return { type: "simple", assigns: [], words, redirects: [] };
  }

  private forLoop(n: SyntaxNode): Command {
    let name: string | undefined;
    const items: Word[] = [];
    let body: Command[] = [];
    for (const [c, field] of fields(n)) {
      if (field === "variable") name = c.text;
      else if (field === "value") items.push(this.word(c));
      else if (field === "body") body = this.nested(() => this.statement(c));
      else if (c.isNamed) notAnalysed(c, " in a for loop");
    }
    if (name === undefined) return notAnalysed(n);
    return { type: "for", name, items, body: { commands: body }, redirects: [] };
  }

  private caseStatement(n: SyntaxNode): GroupCommand {
    const words: Word[] = [];
    const body: Command[] = [];
    for (const [c, field] of fields(n)) {
      if (field === "value") words.push(this.word(c));
      else if (c.type === "case_item") {
        for (const [d, itemField] of fields(c)) {
          if (itemField === "value") words.push(this.word(d));
          else if (d.isNamed && d.type !== "comment") body.push(...this.nested(() => this.statement(d)));
        }
      } else if (c.isNamed && c.type !== "comment") notAnalysed(c, " in a case statement");
    }
    return this.group(body, words);
  }

  /** A definition runs nothing, but its body is checked as if it ran: calling it would. */
  private functionDefinition(n: SyntaxNode): Command {
    let body: Command[] = [];
    const parts: RedirectParts = { redirects: [], words: [], commands: [] };
    for (const [c, field] of fields(n)) {
      if (field === "body") body = this.nested(() => this.statement(c));
      else if (field === "redirect") {
        const r = this.redirect(c);
        if (r.words.length > 0 || r.commands.length > 0) notAnalysed(c, " on a function definition");
        parts.redirects.push(...r.redirects);
      } else if (c.isNamed && field !== "name") notAnalysed(c, " in a function definition");
    }
    return { ...this.group(body), redirects: parts.redirects };
  }

  /** `[ ... ]` and `[[ ... ]]` as the words of the command they are. */
  private testWords(n: SyntaxNode): Word[] {
    const words: Word[] = [];
    const flat = (c: SyntaxNode): void => {
      if (!c.isNamed) words.push(fixedWord(c.type));
      else if (c.type === "test_operator") words.push(fixedWord(c.text));
      else if (
        ["binary_expression", "unary_expression", "parenthesized_expression", "negated_expression"].includes(c.type)
      )
        kids(c).forEach(flat);
      else words.push(this.word(c));
    };
    kids(n).forEach(flat);
    return words;
  }

  word(n: SyntaxNode): Word {
    const b = new WordBuilder();
    this.piece(n, b, false, n.endIndex);
    return b.finish(n.text);
  }

  /** Adds one part of a word to `b`; `wordEnd` bounds a glob's or brace's search for its close. */
  private piece(n: SyntaxNode, b: WordBuilder, quoted: boolean, wordEnd: number): void {
    const text = n.text;
    switch (n.type) {
      case "word":
      case "number":
      case "variable_name":
      case "special_variable_name":
        return this.unquoted(text, n.startIndex, b, wordEnd);
      case "concatenation":
        for (const c of kids(n)) c.isNamed ? this.piece(c, b, quoted, wordEnd) : notAnalysed(c, " in a word");
        return;
      case "string":
      case "translated_string":
        return this.doubleQuoted(n, b);
      case "raw_string":
        return b.lit(text.slice(1, -1));
      case "ansi_c_string":
        return b.lit(decodeAnsiC(text.slice(2, -1)));
      case "simple_expansion":
        return b.dyn(text, !quoted || text === "$@");
      case "expansion": {
        const inner = text.slice(2, -1);
        if (!SIMPLE_BRACED.test(inner))
          throw new ShellParseError(`this \${...} parameter expansion is not analysed: ${text}`);
        return b.dyn(text, !quoted || inner === "@");
      }
      case "command_substitution":
        b.scripts.push(this.substitution(n, quoted));
        return b.dyn(text.startsWith("`") ? "`…`" : "$(…)", !quoted);
      case "process_substitution":
        b.scripts.push(this.nested(() => this.script(kids(n))));
        return b.procSubst(`${text.charAt(0)}(…)`);
      case "arithmetic_expansion":
        checkArithmetic(n);
        return b.dyn(text, !quoted);
      case "brace_expression":
        return b.dyn(text, false);
      case "regex":
      case "extglob_pattern":
        auditLiteral(text.replace(/\\./g, "__"), n.startIndex, "a pattern");
        return b.dyn(text, false);
      default:
        return notAnalysed(n, " in a word");
    }
  }

  /** `"..."`: its text with `\$ \` \" \\` unescaped and line continuations removed; expansions inside. */
  private doubleQuoted(n: SyntaxNode, b: WordBuilder): void {
    this.auditGaps(n, "a double-quoted string");
    for (const c of kids(n)) {
      if (c.type === "string_content") {
        auditLiteral(c.text, c.startIndex, "a double-quoted string");
        b.lit(c.text.replace(/\\([$`"\\\n])/g, (_m, ch: string) => (ch === "\n" ? "" : ch)));
      } else if (!c.isNamed) {
        if (c.type === "$") b.lit("$");
        else if (c.type !== '"' && c.type !== '$"') notAnalysed(c, " in a double-quoted string");
      } else this.piece(c, b, true, c.endIndex);
    }
  }

  /** An unquoted literal: backslashes quote, and `*`, `?`, `[...]` and `{a,b}` make it a pattern. */
  private unquoted(text: string, at: number, b: WordBuilder, wordEnd: number): void {
    auditLiteral(text, at, "a word");
    for (let i = 0; i < text.length; i++) {
      const c = text.charAt(i);
      // The grammar reads `[ }` as one word; bash splits it at the blank.
      if (c === " " || c === "\t" || c === "\n")
        throw new ShellParseError(`a word the grammar read across a blank is not analysed (at offset ${at + i})`);
      if (c === "\\") {
        const next = text.charAt(++i);
        if (next !== "\n") b.lit(next === "" ? "\\" : next);
      } else if (
        c === "*" ||
        c === "?" ||
        ((c === "[" || c === "{") && bracketCloses(this.src, at + i + 1, wordEnd, c))
      )
        b.dyn(c, false);
      else b.lit(c);
    }
  }

  /** The text of `n` that no child covers, audited like a literal. */
  private auditGaps(n: SyntaxNode, where: string): void {
    let pos = n.startIndex;
    for (const c of kids(n)) {
      if (c.startIndex > pos) auditLiteral(this.src.slice(pos, c.startIndex), pos, where);
      pos = Math.max(pos, c.endIndex);
    }
    if (n.endIndex > pos) auditLiteral(this.src.slice(pos, n.endIndex), pos, where);
  }

  /** `$(...)`, or a backtick substitution, whose body bash unescapes and then parses again. */
  private substitution(n: SyntaxNode, quoted: boolean): Script {
    const text = n.text;
    if (!text.startsWith("`")) return this.nested(() => this.script(kids(n)));
    if (!text.endsWith("`") || text.length < 2) return notAnalysed(n);
    return parseShellTree(this.parser, unescapeBackticks(text.slice(1, -1), quoted), this.depth + 1);
  }
}

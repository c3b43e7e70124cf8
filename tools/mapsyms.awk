# Reads a GNU ld version script (the export maps in src/) and prints, one per line:
#   N <TAB> node <TAB> parent      for every version node ("-" when it has no parent)
#   G <TAB> node <TAB> name        for every name in a node's global: list
# Handles /* */ and # comments; names may be glob patterns (the caller decides what to do).
{ text = text $0 "\n" }
END {
	clean = ""
	while ((i = index(text, "/*")) > 0) {
		clean = clean substr(text, 1, i - 1) " "
		text = substr(text, i + 2)
		j = index(text, "*/")
		if (j == 0) { text = ""; break }
		text = substr(text, j + 2)
	}
	text = clean text
	nl = split(text, lines, "\n")
	text = ""
	for (k = 1; k <= nl; k++) { sub(/#.*/, "", lines[k]); text = text " " lines[k] }
	gsub(/[{};:]/, " & ", text)
	nt = split(text, tok, /[ \t]+/)

	depth = 0; node = ""; scope = "global"; closed = ""
	for (k = 1; k <= nt; k++) {
		w = tok[k]
		if (w == "") continue
		if (depth == 0) {
			if (w == "{") { depth = 1; scope = "global"; if (node == "") node = "(anonymous)"; continue }
			if (w == ";") {
				if (closed != "") { print "N\t" closed "\t" (parent == "" ? "-" : parent) }
				closed = ""; parent = ""; node = ""; continue
			}
			if (closed != "") parent = w; else node = w
			continue
		}
		if (w == "{") { depth++; continue }      # extern "C" { ... } blocks
		if (w == "}") { depth--; if (depth == 0) { closed = node; parent = "" }; continue }
		if (w == ":" || w == ";") continue
		if ((w == "global" || w == "local") && tok[k + 1] == ":") { scope = w; continue }
		if (scope == "global") print "G\t" node "\t" w
	}
}

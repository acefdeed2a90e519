# bash completion for sbxctl: commands, app names (from sbxctl status) and options
_sbxctl() {
	local cur prev words cword
	_init_completion 2>/dev/null || { cur=${COMP_WORDS[COMP_CWORD]}; prev=${COMP_WORDS[COMP_CWORD-1]}; }
	local cmds="status start stop restart tail caps policy sandboxes run mcp version"
	local i cmd=""
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		--url|--data-dir) ((i++)) ;;
		-*) ;;
		*) cmd=${COMP_WORDS[i]}; break ;;
		esac
	done
	if [[ -z $cmd ]]; then
		case $prev in
		--data-dir) COMPREPLY=($(compgen -d -- "$cur")); return ;;
		--url) return ;;
		esac
		COMPREPLY=($(compgen -W "$cmds --url --data-dir --json --help" -- "$cur"))
		return
	fi
	case $cmd in
	status|start|stop|restart|tail)
		local apps
		apps=$(sbxctl status 2>/dev/null | awk '{print $1}')
		[[ $cmd == tail ]] && apps+=" -f stdout stderr"
		[[ $cmd == start || $cmd == stop || $cmd == restart ]] && apps+=" all"
		COMPREPLY=($(compgen -W "$apps" -- "$cur")) ;;
	policy)
		COMPREPLY=($(compgen -W "execShell=on execShell=off schedulerScript=on schedulerScript=off runPython=on runPython=off runNode=on runNode=off" -- "$cur")) ;;
	run)
		COMPREPLY=($(compgen -W "$(sbxctl sandboxes 2>/dev/null | awk '{print $2}') --language --" -- "$cur")) ;;
	esac
}
complete -F _sbxctl sbxctl

# SPDX-License-Identifier: GPL-2.0
# bash completion for mmctl(8): objects, verbs, options, channel names
# (asked from the running module), setting keywords and values.

_mmctl_channels()
{
	local dev=$1
	# "camera0: id 1 dev mmedge0 ..." -> camera0
	mmctl ${dev:+-d "$dev"} chan show 2>/dev/null |
		sed -n 's/^\([a-z0-9_-]*\): id .*/\1/p'
}

_mmctl()
{
	local cur prev words cword
	_init_completion || return

	local i dev="" obj="" verb="" objidx=0
	# Global options come first; find the object and its verb.
	for ((i = 1; i < cword; i++)); do
		case ${words[i]} in
		-d | --dev)
			dev=${words[i + 1]}
			((i++))
			;;
		-*) ;;
		*)
			obj=${words[i]}
			objidx=$i
			break
			;;
		esac
	done

	if [[ -z $obj ]]; then
		case $prev in
		-d | --dev)
			COMPREPLY=($(compgen -W "$(cd /dev 2>/dev/null && ls -d mmedge[0-9]* 2>/dev/null)" -- "$cur"))
			return
			;;
		esac
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "-d --dev -j --json -p --pretty -h --help -V --version" -- "$cur"))
		else
			COMPREPLY=($(compgen -W "caps dev chan stats monitor bus apply help" -- "$cur"))
		fi
		return
	fi

	local verbs
	case $obj in
	caps | dev) verbs="show help" ;;
	chan) verbs="show set help" ;;
	stats) verbs="show help" ;;
	monitor) verbs="all help" ;;
	bus) verbs="show set help" ;;
	apply) verbs="" ;;
	*) return ;;
	esac

	if [[ $obj == apply ]]; then
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "-n -h" -- "$cur"))
		else
			_filedir
		fi
		return
	fi

	if ((cword == objidx + 1)); then
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "-h" -- "$cur"))
			[[ $obj == stats ]] && COMPREPLY+=($(compgen -W "-w -c" -- "$cur"))
			[[ $obj == monitor ]] && COMPREPLY+=($(compgen -W "-c" -- "$cur"))
		else
			COMPREPLY=($(compgen -W "$verbs" -- "$cur"))
		fi
		return
	fi
	verb=${words[objidx + 1]}

	case $obj/$verb in
	caps/show | dev/show)
		COMPREPLY=($(compgen -W "$(cd /dev 2>/dev/null && ls -d mmedge[0-9]* 2>/dev/null) -h" -- "$cur"))
		;;
	chan/show)
		((cword == objidx + 2)) &&
			COMPREPLY=($(compgen -W "$(_mmctl_channels "$dev") -h" -- "$cur"))
		;;
	chan/set)
		if ((cword == objidx + 2)); then
			COMPREPLY=($(compgen -W "$(_mmctl_channels "$dev") -h" -- "$cur"))
			return
		fi
		case $prev in
		weight) COMPREPLY=($(compgen -W "50 100 200 400" -- "$cur")) ;;
		class) COMPREPLY=($(compgen -W "best-effort latency" -- "$cur")) ;;
		cap) COMPREPLY=($(compgen -W "none 64k 1M 10M 100M" -- "$cur")) ;;
		*)
			local used="" w
			for w in "${words[@]:objidx+3}"; do
				used+=" $w"
			done
			local left="" k
			for k in weight class cap; do
				[[ " $used " == *" $k "* ]] || left+=" $k"
			done
			COMPREPLY=($(compgen -W "$left" -- "$cur"))
			;;
		esac
		;;
	stats/* | monitor/*)
		case $prev in
		-w) COMPREPLY=($(compgen -W "0.5 1 2 5" -- "$cur")) ;;
		-c) ;;
		*)
			if [[ $obj == stats ]]; then
				COMPREPLY=($(compgen -W "-w -c -h" -- "$cur"))
			else
				COMPREPLY=($(compgen -W "-c -h" -- "$cur"))
			fi
			;;
		esac
		;;
	bus/set)
		((cword == objidx + 2)) &&
			COMPREPLY=($(compgen -W "100M 200M 500M 1G -h" -- "$cur"))
		;;
	esac
} &&
	complete -F _mmctl mmctl

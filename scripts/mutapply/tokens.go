package main

import "go/token"

// tokenTypes and tokenMutations are gremlins' own tables
// (github.com/go-gremlins/gremlins v0.6.0, internal/engine/mappings.go),
// restated because gremlins keeps them internal: which mutation types a
// token admits, and what each type turns it into.
var tokenTypes = map[token.Token][]string{
	token.ADD:            {"ARITHMETIC_BASE"},
	token.ADD_ASSIGN:     {"INVERT_ASSIGNMENTS", "REMOVE_SELF_ASSIGNMENTS"},
	token.AND:            {"INVERT_BITWISE"},
	token.AND_ASSIGN:     {"REMOVE_SELF_ASSIGNMENTS", "INVERT_BWASSIGN"},
	token.AND_NOT:        {"INVERT_BITWISE"},
	token.AND_NOT_ASSIGN: {"REMOVE_SELF_ASSIGNMENTS", "INVERT_BWASSIGN"},
	token.BREAK:          {"INVERT_LOOPCTRL"},
	token.CONTINUE:       {"INVERT_LOOPCTRL"},
	token.DEC:            {"INCREMENT_DECREMENT"},
	token.EQL:            {"CONDITIONALS_NEGATION"},
	token.GEQ:            {"CONDITIONALS_BOUNDARY", "CONDITIONALS_NEGATION"},
	token.GTR:            {"CONDITIONALS_BOUNDARY", "CONDITIONALS_NEGATION"},
	token.INC:            {"INCREMENT_DECREMENT"},
	token.LAND:           {"INVERT_LOGICAL"},
	token.LEQ:            {"CONDITIONALS_BOUNDARY", "CONDITIONALS_NEGATION"},
	token.LOR:            {"INVERT_LOGICAL"},
	token.LSS:            {"CONDITIONALS_BOUNDARY", "CONDITIONALS_NEGATION"},
	token.MUL:            {"ARITHMETIC_BASE"},
	token.MUL_ASSIGN:     {"INVERT_ASSIGNMENTS", "REMOVE_SELF_ASSIGNMENTS"},
	token.NEQ:            {"CONDITIONALS_NEGATION"},
	token.OR:             {"INVERT_BITWISE"},
	token.OR_ASSIGN:      {"REMOVE_SELF_ASSIGNMENTS", "INVERT_BWASSIGN"},
	token.QUO:            {"ARITHMETIC_BASE"},
	token.QUO_ASSIGN:     {"INVERT_ASSIGNMENTS", "REMOVE_SELF_ASSIGNMENTS"},
	token.REM:            {"ARITHMETIC_BASE"},
	token.REM_ASSIGN:     {"INVERT_ASSIGNMENTS", "REMOVE_SELF_ASSIGNMENTS"},
	token.SHL:            {"INVERT_BITWISE"},
	token.SHL_ASSIGN:     {"REMOVE_SELF_ASSIGNMENTS", "INVERT_BWASSIGN"},
	token.SHR:            {"INVERT_BITWISE"},
	token.SHR_ASSIGN:     {"REMOVE_SELF_ASSIGNMENTS", "INVERT_BWASSIGN"},
	token.SUB:            {"INVERT_NEGATIVES", "ARITHMETIC_BASE"},
	token.SUB_ASSIGN:     {"INVERT_ASSIGNMENTS", "REMOVE_SELF_ASSIGNMENTS"},
	token.XOR:            {"INVERT_BITWISE"},
	token.XOR_ASSIGN:     {"REMOVE_SELF_ASSIGNMENTS", "INVERT_BWASSIGN"},
}

var tokenMutations = map[string]map[token.Token]token.Token{
	"ARITHMETIC_BASE": {
		token.ADD: token.SUB, token.MUL: token.QUO, token.QUO: token.MUL,
		token.REM: token.MUL, token.SUB: token.ADD,
	},
	"CONDITIONALS_BOUNDARY": {
		token.GEQ: token.GTR, token.GTR: token.GEQ,
		token.LEQ: token.LSS, token.LSS: token.LEQ,
	},
	"CONDITIONALS_NEGATION": {
		token.EQL: token.NEQ, token.GEQ: token.LSS, token.GTR: token.LEQ,
		token.LEQ: token.GTR, token.LSS: token.GEQ, token.NEQ: token.EQL,
	},
	"INCREMENT_DECREMENT": {token.DEC: token.INC, token.INC: token.DEC},
	"INVERT_ASSIGNMENTS": {
		token.ADD_ASSIGN: token.SUB_ASSIGN, token.MUL_ASSIGN: token.QUO_ASSIGN,
		token.QUO_ASSIGN: token.MUL_ASSIGN, token.REM_ASSIGN: token.REM_ASSIGN,
		token.SUB_ASSIGN: token.ADD_ASSIGN,
	},
	"INVERT_BITWISE": {
		token.AND: token.OR, token.OR: token.AND, token.XOR: token.AND,
		token.AND_NOT: token.AND, token.SHL: token.SHR, token.SHR: token.SHL,
	},
	"INVERT_BWASSIGN": {
		token.AND_ASSIGN: token.OR_ASSIGN, token.OR_ASSIGN: token.AND_ASSIGN,
		token.XOR_ASSIGN: token.AND_ASSIGN, token.AND_NOT_ASSIGN: token.AND_ASSIGN,
		token.SHL_ASSIGN: token.SHR_ASSIGN, token.SHR_ASSIGN: token.SHL_ASSIGN,
	},
	"INVERT_LOGICAL":   {token.LAND: token.LOR, token.LOR: token.LAND},
	"INVERT_LOOPCTRL":  {token.BREAK: token.CONTINUE, token.CONTINUE: token.BREAK},
	"INVERT_NEGATIVES": {token.SUB: token.ADD},
	"REMOVE_SELF_ASSIGNMENTS": {
		token.ADD_ASSIGN: token.ASSIGN, token.AND_ASSIGN: token.ASSIGN,
		token.AND_NOT_ASSIGN: token.ASSIGN, token.MUL_ASSIGN: token.ASSIGN,
		token.OR_ASSIGN: token.ASSIGN, token.QUO_ASSIGN: token.ASSIGN,
		token.REM_ASSIGN: token.ASSIGN, token.SHL_ASSIGN: token.ASSIGN,
		token.SHR_ASSIGN: token.ASSIGN, token.SUB_ASSIGN: token.ASSIGN,
		token.XOR_ASSIGN: token.ASSIGN,
	},
}

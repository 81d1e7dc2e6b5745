package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/siskin-ml/siskin/tokenizer"
)

func tokenizeCmd() *cobra.Command {
	var (
		modelPath string
		idsOnly   bool
		noSpecial bool
	)
	cmd := &cobra.Command{
		Use:   "tokenize -m PATH [--ids] [--no-special] [TEXT...]",
		Short: "Print the token ids and pieces of a text (read from stdin when no TEXT is given)",
		Long: `Tokenize TEXT with the tokenizer at PATH: a model or vocabulary-only GGUF,
a Hugging Face folder (or one holding only tokenizer.json and
tokenizer_config.json), or a SentencePiece tokenizer.model.

By default the model's BOS/EOS tokens are added and special tokens written in
the text (such as <|im_start|>) are recognised; --no-special does neither.
Each token is printed as its id and the text it decodes to; --ids prints only
the ids, space-separated.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if modelPath == "" {
				return fmt.Errorf("-m PATH is required (a .gguf file, a tokenizer folder or a tokenizer.model)")
			}
			var text string
			if len(args) > 0 {
				text = strings.Join(args, " ")
			} else {
				b, err := io.ReadAll(cmd.InOrStdin())
				if err != nil {
					return err
				}
				text = string(b)
			}
			tk, err := tokenizer.Load(modelPath)
			if err != nil {
				return err
			}
			ids := tk.Encode(text, tokenizer.EncodeOptions{AddSpecial: !noSpecial, ParseSpecial: !noSpecial})
			w := cmd.OutOrStdout()
			if idsOnly {
				s := make([]string, len(ids))
				for i, id := range ids {
					s[i] = strconv.Itoa(id)
				}
				fmt.Fprintln(w, strings.Join(s, " "))
				return nil
			}
			for _, id := range ids {
				// The token's own text with any leading space kept: what it
				// adds when it follows other tokens.
				piece := tk.DecodeWith([]int{id}, tokenizer.DecodeOptions{Continuation: true})
				fmt.Fprintf(w, "%7d  %s\n", id, strconv.Quote(piece))
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&modelPath, "model", "m", "", "GGUF file, tokenizer folder or SentencePiece model")
	cmd.Flags().BoolVar(&idsOnly, "ids", false, "print only the ids, space-separated")
	cmd.Flags().BoolVar(&noSpecial, "no-special", false, "add no BOS/EOS and read special-token text as plain text")
	return cmd
}
